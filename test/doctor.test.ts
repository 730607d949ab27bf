// reapkit doctor: the trees whose stdio host is gone, found by their pipes' and sockets' peers (never
// by name), and stopped exactly. Everything that could signal runs in a private PID namespace, where
// the whole process table is the scenario's; outside one, tests assert only on pids they started.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { pipeInode, scanFds } from '../lib/mechanisms/pipes'
import { canUnshare, DIST, exitOf, FIXTURES, jsonLines, ROOT, spawnGroup, waitFor } from './helpers'

const linux = process.platform === 'linux'
const BIN = join(ROOT, 'bin', 'reapkit')
// eslint-disable-next-line @typescript-eslint/no-require-imports
const reapkit = require(DIST) as typeof import('../lib/index')

describe.runIf(linux)('findOrphans (on this machine: asserts on its own pids only)', () => {
  it('lists a server whose host was SIGKILLed, with its child, and not a server whose host lives', async () => {
    const host = spawnGroup(process.execPath, [join(FIXTURES, 'doctor-host.cjs'), 'one'])
    const ready = await jsonLines(host.stdout!).next((m) => m.event === 'ready', 10_000, 'the host')
    const live = spawnGroup(process.execPath, [join(FIXTURES, 'doctor-server.cjs'), 'mcp-decoy'], { stdio: ['pipe', 'pipe', 'ignore'] })
    try {
      const before = await reapkit.findOrphans()
      const roots = before.trees.map((t) => t.root)
      expect(roots).not.toContain(ready.server)
      expect(roots).not.toContain(live.pid)
      process.kill(host.pid!, 'SIGKILL')
      await exitOf(host)
      const after = await reapkit.findOrphans()
      const tree = after.trees.find((t) => t.root === ready.server)
      expect(tree, JSON.stringify(after.trees.map((t) => t.root))).toBeDefined()
      expect(tree!.processes[0]!.evidence).toMatch(/^stdin socket:\[\d+\] has no peer; stdout socket:\[\d+\] has no peer$/)
      expect(tree!.processes[0]!.start).toMatch(/^\d+$/)
      expect(after.trees.map((t) => t.root)).not.toContain(live.pid)
      // The CLI's JSON says the same, and exits 1 (something found: this one at least).
      const r = spawnSync(BIN, ['doctor', '--json'], { encoding: 'utf8', timeout: 30_000 })
      expect(r.status, r.stderr).toBe(1)
      const json = JSON.parse(r.stdout) as import('../lib/index').DoctorReport
      const listed = json.trees.find((t) => t.root === ready.server)!
      expect(listed.processes.map((p) => [p.pid, p.ppid])).toContainEqual([ready.server, expect.any(Number)])
      expect(listed.processes[0]!.command).toContain('doctor-server.cjs')
    } finally {
      try {
        process.kill(ready.server, 'SIGKILL') // ours: started by our host, pid checked above
      } catch {}
    }
  })

  it('the fd/fdinfo scan (the path without the addon) sees which end of a pipe each process holds', async () => {
    const sh = spawnGroup('sh', ['-c', 'sleep 30 | cat'], { stdio: ['ignore', 'ignore', 'ignore'] })
    let kids: number[] = []
    await waitFor(() => (kids = readFileSync(`/proc/${sh.pid}/task/${sh.pid}/children`, 'utf8').trim().split(' ').filter(Boolean).map(Number)).length === 2, 5000, 'the pipeline')
    await new Promise((r) => setTimeout(r, 100)) // both exec'd
    const scan = scanFds(kids)
    const a = scan.stdio.get(kids[0]!)
    const writer = pipeInode(a!.stdout) !== null ? kids[0]! : kids[1]!
    const reader = writer === kids[0] ? kids[1]! : kids[0]!
    const inode = pipeInode(scan.stdio.get(writer)!.stdout)!
    expect(pipeInode(scan.stdio.get(reader)!.stdin)).toBe(inode)
    expect([...scan.pipes.get(inode)!.writers]).toEqual([writer])
    expect([...scan.pipes.get(inode)!.readers]).toEqual([reader])
  })

  it('refuses bad options before looking, and bad arguments with exit status 2', async () => {
    await expect(reapkit.findOrphans({ paths: 'x' as never })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
    await expect(reapkit.findOrphans(null as never)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE' })
    for (const args of [['--bogus'], ['--grace-ms', 'soon', '--stop'], ['--yes'], ['--path']]) {
      const r = spawnSync(BIN, ['doctor', ...args], { encoding: 'utf8', timeout: 30_000 })
      expect(r.status, args.join(' ')).toBe(2)
      expect(r.stderr).toMatch(/^reapkit doctor: /)
    }
    const help = spawnSync(BIN, ['doctor', '--help'], { encoding: 'utf8', timeout: 30_000 })
    expect(help.status).toBe(0)
    expect(help.stdout).toMatch(/^Usage: reapkit doctor/)
  })
})

describe.runIf(canUnshare)('reapkit doctor in a private PID namespace (as root)', () => {
  it('lists exactly the three leaked trees (sh -c on pipes, npx + a real MCP server, a SIGTERM-ignorer), no decoy; --stop leaves nothing', async () => {
    const ns = spawnGroup('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, join(FIXTURES, 'doctor-ns.cjs')])
    const r = await jsonLines(ns.stdout!).next((m) => m.event === 'result' || m.event === 'error', 110_000, 'the scenario')
    expect(r.event, JSON.stringify(r)).toBe('result')
    const sorted = (a: number[]) => [...a].sort((x, y) => x - y)
    // Every process of each tree: sh -c + node; npx + sh + the memory server; the server + its child.
    expect(r.trees.sh.length).toBe(2)
    expect(r.trees.npx.length).toBeGreaterThanOrEqual(2)
    expect(r.trees.term.length).toBe(2)
    expect(r.first.status).toBe(1)
    const expected = [r.trees.sh, r.trees.npx, r.trees.term].map(sorted).sort((a, b) => a[0] - b[0])
    expect(r.first.trees.map((t: { pids: number[] }) => t.pids).sort((a: number[], b: number[]) => a[0]! - b[0]!)).toEqual(expected)
    const evidence = Object.fromEntries(r.first.trees.map((t: { root: number; evidence: string }) => [t.root, t.evidence]))
    expect(evidence[r.trees.sh[0]]).toMatch(/^stdin pipe:\[\d+\] has no writer; stdout pipe:\[\d+\] has no reader$/)
    expect(evidence[r.trees.term[0]]).toMatch(/^stdin socket:\[\d+\] has no peer; stdout socket:\[\d+\] has no peer$/)
    // Another user's orphan: only with --all-users.
    expect(r.first.trees.map((t: { root: number }) => t.root)).not.toContain(r.decoys.nobody)
    expect(r.allUsersRoots).toContain(r.decoys.nobody)
    // The human listing: each tree, the summary line.
    expect(r.human.status).toBe(1)
    expect(r.human.stdout).toMatch(/\n3 orphaned servers, \d+ processes, [\d.]+ [KMG]iB\n$/)
    expect(r.human.stdout).toContain('mcp-server-memory')
    // --stop without a terminal and without --yes: refused, nothing signalled.
    expect(r.refused.status).toBe(2)
    expect(r.refused.stderr).toMatch(/--yes/)
    // --stop --yes: every tree stopped (the SIGTERM-ignorer by SIGKILL after the grace), then none left.
    expect(r.stop.status, r.stop.stderr).toBe(0)
    const byRoot = Object.fromEntries(r.stop.stopped.map((s: { root: number }) => [s.root, s]))
    expect(byRoot[r.trees.term[0]].escalated).toBe(true)
    expect(byRoot[r.trees.sh[0]].escalated).toBe(false)
    for (const s of r.stop.stopped) expect(s.survivors).toEqual([])
    expect(r.after).toEqual({ status: 0, trees: 0 })
    expect(r.treesGone).toBe(true)
    // Decoys (live hosts, an mcp-named server with a live host, `sleep | cat`, a terminal, /dev/null,
    // another user's orphan): all still running.
    expect(r.decoysAlive).toBe(r.decoyCount)
    expect(await exitOf(ns, 30_000)).toEqual({ code: 0, signal: null })
  }, 130_000)

  it('a pipe peer that this /proc cannot show (outside the namespace) still counts: the kernel is asked', async () => {
    // sleep | (namespace: PID 1 and its child on those pipes) | cat: writer and reader live outside.
    const r = spawnSync('sh', ['-c', 'sleep 5 | unshare --pid --fork --mount-proc "$0" "$1" | cat >/dev/null', process.execPath, join(FIXTURES, 'doctor-hidden.cjs')], {
      encoding: 'utf8', timeout: 60_000, env: { ...process.env, REAPKIT_DIST: DIST }, killSignal: 'SIGKILL',
    })
    const line = r.stderr.split('\n').find((l) => l.startsWith('{'))
    expect(line, r.stderr).toBeDefined()
    const result = JSON.parse(line!)
    expect(result.stdin).toMatch(/^pipe:/)
    expect(result.stdout).toMatch(/^pipe:/)
    expect(result.listed).not.toContain(result.child)
  }, 70_000)

  it('--stop on a terminal asks first: n stops nothing, y stops the tree', () => {
    const r = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'sh', join(FIXTURES, 'doctor-tty.sh'), BIN], { encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' })
    expect(r.stdout, r.stderr).toContain('RESULT no=1 after_no=S yes=0 after_yes=')
    expect(r.stdout).not.toMatch(/after_yes=[RSD]/) // gone (or a zombie): stopped
    expect(r.stdout).toContain('PROMPT_NO 1')
    expect(r.stdout).toContain('STOPPED_YES 1')
  }, 70_000)

  it('never signals a pid recycled between the listing and the stop (ns_last_pid)', async () => {
    const ns = spawnGroup('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, join(FIXTURES, 'doctor-recycle.cjs')])
    const r = await jsonLines(ns.stdout!).next((m) => ['result', 'skip', 'error'].includes(m.event), 50_000, 'the recycle result')
    expect(r.event, JSON.stringify(r)).toBe('result')
    expect(r.listed).toEqual([r.server]) // the listing had the orphan
    expect(r.reusedPid).toBe(r.server) // its pid went to an unrelated process
    expect(r.results).toEqual([{ root: r.server, signalled: [], escalated: false, skipped: [{ pid: r.server, reason: 'recycled' }], survivors: [] }])
    expect(r.newProcessAlive).toBe(true)
    expect(await exitOf(ns, 30_000)).toEqual({ code: 0, signal: null })
  }, 60_000)
})

// Issue 32 item 6: as root on a busy machine doctor printed every user's zombies, two lines each
// (125 zombies, ~250 lines before the verdict). A zombie is no server to stop: one line counts them.
describe.runIf(canUnshare)('reapkit doctor: zombies (private PID namespace)', () => {
  it('are one line in words, counted by parent, however many; --json lists each', () => {
    // A parent (sleep, which never reaps) of 7 exited children, then doctor in words and in JSON.
    const script = `
      (for i in 1 2 3 4 5 6 7; do sleep 0 & done; exec sleep 30) &
      parent=$!
      while [ "$(grep -l '^State:.Z' /proc/[0-9]*/status 2>/dev/null | wc -l)" -lt 7 ]; do sleep 0.05; done
      echo "PARENT $parent"
      "$0" doctor --no-containers
      echo "JSON $("$0" doctor --no-containers --json | tr -d '\\n')"
      kill $parent`
    const r = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', '--kill-child', 'sh', '-c', script, BIN], { encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' })
    const parent = Number(/^PARENT (\d+)$/m.exec(r.stdout)?.[1])
    expect(parent, r.stdout + r.stderr).toBeGreaterThan(1)
    const words = r.stdout.split('\n').filter((l) => !l.startsWith('JSON ') && !l.startsWith('PARENT '))
    const zombieLines = words.filter((l) => /zombie/i.test(l))
    expect(zombieLines, words.join('\n')).toHaveLength(1) // before: 7 entries of 2 lines each
    expect(zombieLines[0]).toMatch(new RegExp(`^  7 zombies \\(exited, not yet reaped by its living parent: 7 of pid ${parent}\\): not servers, --stop leaves them`))
    const json = JSON.parse(/^JSON (.*)$/m.exec(r.stdout)![1]!) as { zombies: Array<{ pid: number; ppid: number }> }
    expect(json.zombies).toHaveLength(7)
    expect(json.zombies.every((z) => z.ppid === parent)).toBe(true)
  }, 70_000)
})
