// The `reapkit` command (bin/reapkit, which execs the native supervisor native/supervise/), on real
// process trees. Every process these tests start is in a group the cleanup kills (spawnGroup) or is
// registered with trackGroup as soon as its pid is known, including the setsid escapees.
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, copyFileSync, cpSync, mkdtempSync, readFileSync, readlinkSync, readdirSync, rmdirSync, rmSync, statSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { canUnshare, childrenOf, descendants, DIST, exitOf, FIXTURES, isGone, jsonLines, procStat, ROOT, spawnGroup, trackGroup, waitFor } from './helpers'
import { connectStdioV1 } from './mcp-sdk'

const BIN = join(ROOT, 'bin', 'reapkit')
const TREE = join(FIXTURES, 'tree.sh')
const linux = process.platform === 'linux'
const dir = mkdtempSync(join(tmpdir(), 'reapkit-cli-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0
const tempFile = () => join(dir, `tree-${++files}`)

/** The tree.sh processes, by level, once all four have written their line (bounded wait). */
async function readTree(out: string): Promise<Record<string, number>> {
  let tree: Record<string, number> = {}
  await waitFor(
    () => {
      try {
        tree = Object.fromEntries(
          readFileSync(out, 'utf8').trim().split('\n').map((l) => [l.split(' ')[0], Number(l.split(' ')[1])]),
        )
      } catch {
        return false
      }
      return ['1', '2', '3', 'escapee'].every((k) => tree[k]! > 0)
    },
    10_000,
    'the tree to start',
  )
  // Cleanup: the command's group (level 1 leads it) and the escapee's own group and session.
  trackGroup(tree['1']!)
  trackGroup(tree.escapee!)
  return tree
}

const alive = (pids: number[]) => pids.filter((p) => !isGone(p))

describe('reapkit -- command', () => {
  it('passes exit codes and signal deaths through (128 + n); 127 for a missing command, 125 for bad options', async () => {
    const run = (args: string[]) => spawnSync(BIN, args, { encoding: 'utf8', timeout: 30_000 })
    expect(run(['--', 'sh', '-c', 'exit 42']).status).toBe(42)
    expect(run(['--', 'sh', '-c', 'kill -USR1 $$']).status).toBe(128 + 10)
    expect(run(['sh', '-c', 'exit 3']).status).toBe(3) // the `--` is optional before a command
    const missing = run(['--', 'reapkit-no-such-command'])
    expect(missing.status).toBe(127)
    expect(missing.stderr).toMatch(/cannot execute reapkit-no-such-command/)
    for (const bad of [['--grace', 'soon', '--', 'true'], ['--signal', 'SIGNOPE', '--', 'true'], ['--bogus', '--', 'true'], []]) {
      const r = run(bad)
      expect(r.status, bad.join(' ')).toBe(125)
      expect(r.stderr, bad.join(' ')).toMatch(/^reapkit: /)
    }
    // The library's environment knobs, with the same clamping: a bad value is reported, never fatal.
    const knob = spawnSync(BIN, ['--', 'sh', '-c', 'exit 0'], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, REAPKIT_KILL_GRACE_MS: 'soon', REAPKIT_CLOSE_TIMEOUT_MS: '5' } })
    expect(knob.status).toBe(0)
    expect(knob.stderr).toMatch(/REAPKIT_KILL_GRACE_MS=soon is not a number of milliseconds; using 9000/)
    expect(knob.stderr).toMatch(/REAPKIT_CLOSE_TIMEOUT_MS=5 is outside 250\.\.30000 ms; using 250/)
    expect(run(['--version']).stdout).toBe(`reapkit ${require('../package.json').version}\n`)
    expect(run(['--help']).stdout).toMatch(/usage: reapkit \[options\] -- command/)
  })

  it('leaves stdio to the command: 1 MiB through `reapkit -- cat` comes back byte for byte; stdin end reaches it', async () => {
    const data = randomBytes(1 << 20)
    // maxBuffer counts stdout and stderr together: 1 MiB exactly would overflow it by the 'eof' line,
    // and Node would SIGTERM the command when it noticed.
    const r = spawnSync(BIN, ['--', 'sh', '-c', 'cat; echo eof >&2; exit 3'], { input: data, timeout: 30_000, maxBuffer: 4 << 20 })
    expect(r.error).toBeUndefined()
    expect(r.status).toBe(3)
    expect(Buffer.compare(r.stdout, data)).toBe(0)
    expect(r.stderr.toString()).toBe('eof\n')
  })

  for (const isolate of [false, true]) {
    it.runIf(!isolate || (linux && canUnshare))(`${isolate ? '--isolate: ' : ''}SIGTERM to the wrapper reaches the command once; one that ignores it is SIGKILLed after the grace, not before`, async () => {
      const grace = 600
      const w = spawnGroup(BIN, [...(isolate ? ['--isolate'] : []), '--verbose', '--grace', String(grace), '--', 'sh', '-c',
        "trap 'echo got-term' TERM; echo ready; while :; do sleep 0.05; done"], { stdio: ['ignore', 'pipe', 'pipe'] })
      const out = jsonLines(w.stdout!)
      const events = jsonLines(w.stderr!)
      await out.next((m) => m.raw === 'ready', 10_000, 'ready')
      const start = await events.next((m) => m.event === 'start')
      if (!isolate) trackGroup(start.pgid) // (isolated: the namespace dies with the wrapper's group)
      const t0 = performance.now()
      w.kill('SIGTERM')
      await out.next((m) => m.raw === 'got-term', 5000, 'the SIGTERM to reach the command')
      const { code } = await exitOf(w, 10_000)
      const elapsed = performance.now() - t0
      expect(code).toBe(128 + 9)
      expect(elapsed).toBeGreaterThanOrEqual(grace - 10) // ms clocks round: allow one tick
      expect(out.seen.filter((m) => m.raw === 'got-term').length, 'SIGTERMs the command received').toBe(1)
      const names = events.seen.map((e) => e.event)
      expect(names.indexOf('stop')).toBeLessThan(names.indexOf('escalate'))
      expect(events.seen.find((e) => e.event === 'escalate').why).toBe('grace')
      expect(events.seen.at(-1)).toMatchObject({ event: 'exit', code: 137, survivors: 0 })
    })
  }

  it.runIf(linux && canUnshare)('--isolate: a forwarded signal crosses the namespace to the command; a fault-named one stops it', () => {
    const r = spawnSync('unshare', ['--pid', '--kill-child', '--mount-proc', 'sh', join(FIXTURES, 'wrapper-signal.sh'), BIN, '14', '24', '37'], {
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, ISOLATE: '1' },
    })
    expect(r.status, r.stderr).toBe(0)
    const lines = r.stdout.trim().split('\n').map((l) => l.replace(/ escapee=.*$/, ''))
    expect(lines).toEqual(['sig=14 status=7 got=14,', 'sig=24 status=7 got=TERM,', 'sig=37 status=7 got=37,'])
  })

  it.runIf(linux && canUnshare)('no signal knocks the wrapper over: each is forwarded to the command or stops it with the grace, and nothing survives', () => {
    // Inside a private PID namespace (it sends signals). SIGALRM and the rest used to end the wrapper
    // at once (128 + n): the command died of its parent-death SIGKILL and the setsid escapee lived.
    const SIGRTMIN = 34 // glibc's (the kernel's 32 and 33 are the C library's own)
    const forwarded = { ALRM: 14, VTALRM: 26, PROF: 27, PWR: 30, IO: 29, 'RTMIN+3': SIGRTMIN + 3 }
    const stops = { XCPU: 24 } // a request to end: the command gets the stop signal (SIGTERM)
    const all = { ...forwarded, ...stops }
    const r = spawnSync('unshare', ['--pid', '--kill-child', '--mount-proc', 'sh', join(FIXTURES, 'wrapper-signal.sh'), BIN, ...Object.values(all).map(String)], {
      encoding: 'utf8',
      timeout: 120_000,
    })
    expect(r.status, r.stderr).toBe(0)
    const lines = Object.fromEntries(r.stdout.trim().split('\n').map((l) => [Number(l.match(/^sig=(\d+)/)![1]), l]))
    for (const [name, sig] of Object.entries(all)) {
      const got = sig === stops.XCPU ? 'TERM' : String(sig)
      expect(lines[sig], `SIG${name}`).toBe(`sig=${sig} status=7 got=${got}, escapee=gone`)
    }
  })

  it.runIf(linux)('host SIGKILLed: a three-level tree whose innermost process double-forks and calls setsid is gone entirely', async () => {
    // Control first: the same tree without the wrapper outlives its SIGKILLed host (so this test can fail).
    const bareOut = tempFile()
    const bare = spawnGroup('sh', ['-c', `sh ${TREE} 1 ${bareOut} & wait`])
    const bareTree = await readTree(bareOut)
    trackGroup(bare.pid!)
    process.kill(bare.pid!, 'SIGKILL')
    await exitOf(bare, 5000)
    await new Promise((r) => setTimeout(r, 1000))
    expect(alive(Object.values(bareTree)).length, 'control: survivors without the wrapper').toBe(4)

    // The host holds all three of the wrapper's stdio pipes, as an MCP host does; --verbose writes
    // lifecycle lines into the stderr pipe, whose reader dies with the host.
    const out = tempFile()
    const host = spawnGroup(process.execPath, ['-e', `
      const c = require('node:child_process').spawn('${BIN}', ['--verbose', '--close-timeout', '300', '--grace', '500',
        '--', 'sh', '${TREE}', '1', '${out}'], { stdio: ['pipe', 'pipe', 'pipe'] })
      c.stderr.on('data', () => {})
      setInterval(() => {}, 1e6)`])
    const tree = await readTree(out)
    const [wrapper] = childrenOf(host.pid!)
    expect(procStat(tree['1']!)![1], 'the command is the wrapper\'s child').toBe(String(wrapper))
    expect(procStat(tree['1']!)![2], 'the command leads its own group').toBe(String(tree['1']))
    await waitFor(() => procStat(tree.escapee!)?.[1] === String(wrapper), 5000, 'the escapee to be adopted by the wrapper')
    process.kill(host.pid!, 'SIGKILL')
    const pids = [...Object.values(tree), wrapper!]
    await waitFor(() => alive(pids).length === 0, 10_000, `the tree to be gone (alive: ${alive(pids)})`)
  })

  it.runIf(linux)('behind launchers that outlive the host (`npx reapkit --`): it watches the host itself', async () => {
    // `npx --package=<this checkout> reapkit -- ...`: npm exec and its sh -c sit between the host and
    // the wrapper and stay alive after the host dies; the wrapper must see through them.
    const out = tempFile()
    const host = spawnGroup(process.execPath, ['-e', `
      const c = require('node:child_process').spawn('npx', ['--yes', '--package=${ROOT}', 'reapkit', '--verbose',
        '--close-timeout', '300', '--grace', '500', '--', 'sh', '${TREE}', '1', '${out}'], { stdio: ['pipe', 'pipe', 'pipe'], cwd: '${ROOT}' })
      c.stderr.on('data', (d) => process.stdout.write(d))
      setInterval(() => {}, 1e6)`], { stdio: ['ignore', 'pipe', 'inherit'] })
    const events = jsonLines(host.stdout!)
    const start = await events.next((m) => m.event === 'start', 30_000, 'the wrapper to start under npx')
    expect(start.launchers, 'npm exec and sh -c between the host and the wrapper').toBeGreaterThanOrEqual(1)
    expect(start.host).toBe(host.pid)
    const tree = await readTree(out)
    const chain = descendants(host.pid!)
    for (const pid of chain) trackGroup(Number(procStat(pid)?.[2]))
    process.kill(host.pid!, 'SIGKILL')
    const pids = [...new Set([...chain, ...Object.values(tree)])]
    await waitFor(() => alive(pids).length === 0, 15_000, `npx, the wrapper and the tree to be gone (alive: ${alive(pids)})`)
  })

  it.runIf(linux)('behind a `sh -c` launcher that outlives the host: it watches the host itself', async () => {
    // The shell does not exec the wrapper (a command follows it), holds the host's stdin pipe, and
    // stays alive after the host dies.
    const out = tempFile()
    const host = spawnGroup(process.execPath, ['-e', `
      const c = require('node:child_process').spawn('sh', ['-c', '"${BIN}" --verbose --close-timeout 300 --grace 500 -- sh ${TREE} 1 ${out}; sleep 1000'],
        { stdio: ['pipe', 'pipe', 'pipe'] })
      c.stderr.on('data', (d) => process.stdout.write(d))
      setInterval(() => {}, 1e6)`], { stdio: ['ignore', 'pipe', 'inherit'] })
    const events = jsonLines(host.stdout!)
    const start = await events.next((m) => m.event === 'start', 10_000, 'the wrapper to start under sh -c')
    expect(start.launchers, 'sh -c between the host and the wrapper').toBe(1)
    expect(start.host).toBe(host.pid)
    const tree = await readTree(out)
    const [shell] = childrenOf(host.pid!)
    const pids = [start.pid, ...Object.values(tree)]
    process.kill(host.pid!, 'SIGKILL')
    await waitFor(() => alive(pids).length === 0, 10_000, `the wrapper and the tree to be gone (alive: ${alive(pids)})`)
    expect(isGone(shell!), 'the launcher outlived the host (so only watching the host could catch it)').toBe(false)
  })

  it.runIf(linux)('a host that passes its own stdin pipe through (`sh -c \'sleep 1000 | node host\'`, stdio inherit) is watched, not the shell above it', async () => {
    // By the pipe rule this host looks like a launcher (it holds the wrapper's stdin) and the shell
    // above it like the host: the shell outlives the host (it waits for `sleep`). Every process of the
    // chain is watched; the first to die is the host.
    const out = tempFile()
    const sh = spawnGroup('sh', ['-c', `sleep 1000 | "${process.execPath}" ${join(FIXTURES, 'pipe-host.cjs')} "${BIN}" --verbose --close-timeout 300 --grace 500 -- sh ${TREE} 1 ${out}`],
      { stdio: ['ignore', 'pipe', 'pipe'] })
    const spawned = await jsonLines(sh.stdout!).next((m) => m.event === 'spawned', 10_000, 'the host to start the wrapper')
    const events = jsonLines(sh.stderr!)
    const start = await events.next((m) => m.event === 'start', 10_000, 'the wrapper to start')
    expect(start.pid).toBe(spawned.wrapper)
    const tree = await readTree(out)
    const pids = [spawned.wrapper, ...Object.values(tree)]
    process.kill(spawned.host, 'SIGKILL')
    await waitFor(() => alive(pids).length === 0, 10_000, `the wrapper and the tree to be gone (alive: ${alive(pids)})`)
    const exit = await events.next((m) => m.event === 'parent-exit', 1000, 'the parent-exit event')
    expect(exit.host, 'the process whose death was noticed').toBe(spawned.host)
    expect(isGone(sh.pid!), 'the shell outlived the host').toBe(false)
  })

  const canScript = linux && spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0
  for (const isolate of [false, true]) {
    it.runIf(canScript && (!isolate || canUnshare))(`${isolate ? '--isolate: ' : ''}an interactive command owns the terminal (reads it, no SIGTTIN)`, () => {
      const r = spawnSync('script', ['-qfec', `"${BIN}" ${isolate ? '--isolate ' : ''}-- sh -c 'read x; echo got:$x'`, '/dev/null'], {
        input: 'hello\n',
        encoding: 'utf8',
        timeout: 15_000,
      })
      expect(r.status, r.stderr).toBe(0)
      expect(r.stdout).toMatch(/got:hello/)
    })
  }

  it.runIf(linux && canUnshare)('under a /proc of another PID namespace it signals its group only, never a stranger', () => {
    // `unshare --pid` without --mount-proc: /proc still shows the outer namespace, where pid 2 is
    // kthreadd. The wrapper (pid 2 here) must not take kernel threads for its children, nor signal
    // the namespace's pid 3 (the canary) thinking it is one of them.
    const r = spawnSync('unshare', ['--pid', '--fork', 'sh', '-c',
      `"${BIN}" --verbose --grace 200 -- sh -c 'sleep 0.3; exit 5' & ` +
      `sh -c 'trap "echo canary-got-TERM" TERM; sleep 1 & wait; sleep 1 & wait; echo canary-done'; wait`], {
      encoding: 'utf8',
      timeout: 20_000,
    })
    expect(r.stdout).toContain('canary-done')
    expect(r.stdout).not.toContain('canary-got-TERM')
    const events = r.stderr.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
    expect(events[0]).toMatchObject({ event: 'start', pid: 2, procTable: false })
    expect(events.at(-1)).toMatchObject({ event: 'exit', code: 5 })
  })

  it.runIf(linux)('a host on the library: spawn(supervisorPath(), ...) defaults to no death signal, and the tree goes with the host', async () => {
    const out = tempFile()
    const host = spawnGroup(process.execPath, ['-e', `
      const r = require(process.env.REAPKIT_DIST)
      const c = r.spawn(r.supervisorPath(), ['--close-timeout', '200', '--grace', '300', '--', 'sh', '${TREE}', '1', '${out}'], { stdio: ['pipe', 'pipe', 'inherit'] })
      console.log(JSON.stringify({ event: 'spawned', pid: c.pid, deathSignal: r.spawnedInfo(c).parentDeathSignal }))
      setInterval(() => {}, 1e6)`])
    const spawned = await jsonLines(host.stdout!).next((m) => m.event === 'spawned')
    expect(spawned.deathSignal).toBeNull()
    const tree = await readTree(out)
    trackGroup(spawned.pid)
    process.kill(host.pid!, 'SIGKILL')
    const pids = [spawned.pid, ...Object.values(tree)]
    await waitFor(() => alive(pids).length === 0, 10_000, `the supervisor and its tree to be gone (alive: ${alive(pids)})`)
  })

  it.runIf(linux)('the wrapper itself SIGKILLed: the kernel\'s parent-death signal takes the command down', async () => {
    const w = spawnGroup(BIN, ['--verbose', '--', 'sleep', '300'], { stdio: ['ignore', 'ignore', 'pipe'] })
    const start = await jsonLines(w.stderr!).next((m) => m.event === 'start')
    trackGroup(start.pgid)
    expect(procStat(start.child)![2], 'the command leads its own group').toBe(String(start.child))
    w.kill('SIGKILL')
    await waitFor(() => isGone(start.child), 5000, 'the command to die with its supervisor')
    if (typeof start.cgroup === 'string') {
      // Its cgroup (docs/cli.md, "The command's cgroup") outlives a SIGKILLed wrapper, named for
      // reapkit doctor: empty once the command is gone. Removed here, as doctor --stop would.
      await waitFor(() => /^populated 0$/m.test(readFileSync(join(start.cgroup, 'cgroup.events'), 'latin1')), 5000, 'the cgroup to empty')
      rmdirSync(start.cgroup)
    }
  })

  it.runIf(linux && canUnshare)('--isolate: SIGKILL the supervisor itself and the whole tree, setsid escapee included, is gone', async () => {
    const info = spawnSync(BIN, ['--isolate', '--', 'sh', '-c', 'echo $$ $(ls /proc | grep -c "^[0-9]"); exit 3'], {
      encoding: 'utf8',
      timeout: 10_000,
    })
    expect(info.status).toBe(3)
    expect(info.stdout.trim().split(' ')[0], 'the command is pid 2 of its namespace (our init is 1)').toBe('2')
    expect(Number(info.stdout.trim().split(' ')[1]), 'its /proc shows its namespace only').toBeLessThan(10)

    const out = tempFile()
    const w = spawnGroup(BIN, ['--isolate', '--', 'sh', TREE, '1', out])
    await waitFor(() => (readFileSync(out, { encoding: 'utf8', flag: 'a+' }).match(/\n/g) ?? []).length >= 4, 10_000, 'the tree')
    const [init] = childrenOf(w.pid!)
    const ns = readlinkSync(`/proc/${init}/ns/pid`)
    const members = readdirSync('/proc').filter((e) => /^\d+$/.test(e)).map(Number).filter((pid) => {
      try {
        return readlinkSync(`/proc/${pid}/ns/pid`) === ns
      } catch {
        return false
      }
    })
    for (const pid of members) trackGroup(Number(procStat(pid)?.[2]))
    expect(members.length, 'init, three levels, the escapee (and their sleeps)').toBeGreaterThanOrEqual(5)
    expect(members.filter((p) => procStat(p)?.[3] !== procStat(init!)?.[3]).length, 'the escapee left the session').toBeGreaterThan(0)
    process.kill(w.pid!, 'SIGKILL')
    await waitFor(() => alive(members).length === 0, 5000, `the namespace to be gone (alive: ${alive(members)})`)
  })

  const canSetpriv = linux && process.getuid?.() === 0 && spawnSync('setpriv', ['--version'], { stdio: 'ignore' }).status === 0
  it.runIf(canUnshare && canSetpriv)('--isolate unprivileged (as nobody): through a user namespace, or one clear line and 125', (ctx) => {
    // nobody may not be able to enter this checkout (a clone under root's 0700 home): stage the
    // supervisor where it can, or say why not.
    const reachable = (path: string): boolean => path.split('/').every((_, i, parts) => (statSync(parts.slice(0, i + 1).join('/') || '/').mode & 0o001) !== 0)
    if (!reachable(tmpdir())) return ctx.skip(`${tmpdir()} is not reachable by nobody: nowhere to stage the supervisor`)
    const { supervisorPath } = require(DIST)
    const stage = mkdtempSync(join(tmpdir(), 'reapkit-nobody-'))
    try {
      chmodSync(stage, 0o755)
      const supervisor = join(stage, 'reapkit-supervise')
      copyFileSync(supervisorPath(), supervisor)
      chmodSync(supervisor, 0o755)
      asNobody(supervisor)
    } finally {
      rmSync(stage, { recursive: true, force: true })
    }
  })

  it.runIf(canUnshare && canSetpriv)('the test above passes from a checkout nobody can enter (0700, as a clone under ~)', () => {
    const copy = mkdtempSync(join(tmpdir(), 'reapkit-0700-')) // mkdtemp: 0700, as root's home is
    try {
      expect(statSync(copy).mode & 0o777).toBe(0o700)
      for (const entry of ['bin', 'dist', 'build', 'prebuilds', 'test', 'package.json', 'vitest.config.mts']) {
        try {
          cpSync(join(ROOT, entry), join(copy, entry), { recursive: true })
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err // build/ or prebuilds/ may be absent
        }
      }
      symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'))
      const r = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', 'test/cli.test.ts', '-t', 'as nobody'], {
        cwd: copy,
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, CI: 'true' },
      })
      expect(r.status, r.stdout + r.stderr).toBe(0)
      expect(r.stdout).toMatch(/1 passed/)
    } finally {
      rmSync(copy, { recursive: true, force: true })
    }
  })

  /** Runs `supervisor --isolate` as nobody: a user namespace makes it work, or it says why not. */
  function asNobody(supervisor: string): void {
    const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', supervisor, '--isolate', '--', 'sh', '-c', 'echo $$ $(id -u); exit 4'], {
      encoding: 'utf8',
      timeout: 10_000,
    })
    if (r.status === 125) {
      // This kernel forbids unprivileged user namespaces: the refusal must be said, not worked around.
      expect(r.stderr).toMatch(/^reapkit: --isolate: the kernel refused a new PID namespace/)
      expect(r.stdout).toBe('')
    } else {
      expect(r.status, r.stderr).toBe(4)
      expect(r.stdout).toBe('2 65534\n')
    }
  }

  it.runIf(linux)('carries a real MCP session (SDK client and server) and leaves nothing when the client closes', async () => {
    const { openProcess } = require(DIST)
    let handle: { signal(s: string): void; close(): void } | undefined
    let server = 0
    try {
      const { client, transport } = await connectStdioV1({ command: BIN, args: ['--', process.execPath, join(FIXTURES, 'cli-mcp-server.mjs')] })
      const wrapper = transport.pid!
      handle = openProcess(wrapper) // pinned: the cleanup below can never hit a recycled pid
      server = childrenOf(wrapper)[0]!
      trackGroup(server)
      const text = `${'ünïcødé ✓ \n "quotes" \\ '.repeat(5000)}end`
      const r = await client.callTool({ name: 'echo', arguments: { text } })
      expect((r.content as Array<{ text: string }>)[0]!.text).toBe(text)
      await client.close()
      await waitFor(() => isGone(wrapper) && isGone(server), 10_000, 'the wrapper and the server to exit')
    } finally {
      try {
        handle?.signal('SIGKILL')
      } catch {
        // already gone
      }
      handle?.close()
    }
  })

  for (const [name, args, verbose] of [
    ['@modelcontextprotocol/server-memory', [], true],
    ['@modelcontextprotocol/server-filesystem', [FIXTURES], false],
  ] as const) {
    it.runIf(linux)(`${name} from npm, started through npx under the wrapper${verbose ? ' (--verbose into the host\'s pipe)' : ''}, leaves nothing when its host is SIGKILLed`, async () => {
      const host = spawnGroup(process.execPath, [join(FIXTURES, 'cli-host.mjs'), name, ...args], verbose ? { env: { VERBOSE: '1' } } : {})
      const ready = await jsonLines(host.stdout!).next((m) => m.event === 'ready', 30_000, 'the MCP handshake')
      expect(ready.tools).toBeGreaterThan(0)
      const tree = descendants(ready.wrapper)
      for (const pid of tree) trackGroup(Number(procStat(pid)?.[2]))
      const commands = tree.map((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '))
      expect(commands.some((c) => c.includes(name.split('/')[1]!)), commands.join('\n')).toBe(true)
      process.kill(host.pid!, 'SIGKILL')
      const pids = [ready.wrapper, ...tree]
      await waitFor(() => alive(pids).length === 0, 15_000, `the server's tree to be gone (alive: ${alive(pids)})`)
    })
  }

  it.runIf(linux)('during the grace it waits by event: no wake-up while an escaped helper ignores SIGTERM, and the helper\'s exit ends the wait at once', async () => {
    // The helper leaves the group (setsid), ignores SIGTERM, and exits on its own 1.5 s into a 60 s
    // grace. The old stop loop rescanned /proc every 20 ms.
    const dir2 = mkdtempSync(join(tmpdir(), 'reapkit-grace-'))
    try {
      const w = spawnGroup(BIN, ['--verbose', '--grace', '60000', '--', 'sh', '-c',
        `setsid sh -c 'trap "" TERM; echo $$ > ${dir2}/helper.tmp; mv ${dir2}/helper.tmp ${dir2}/helper; sleep 1.5; exit 0' & exec sleep 1000`],
      { stdio: ['ignore', 'ignore', 'pipe'] })
      const events = jsonLines(w.stderr!)
      trackGroup((await events.next((m) => m.event === 'start')).pgid)
      await waitFor(() => { try { return readFileSync(join(dir2, 'helper'), 'utf8').trim() !== '' } catch { return false } }, 10_000, 'the helper to start')
      const helper = Number(readFileSync(join(dir2, 'helper'), 'utf8'))
      trackGroup(helper)
      const t0 = performance.now()
      w.kill('SIGTERM')
      await events.next((m) => m.event === 'signalled', 5000, 'the stop')
      const status = () => readFileSync(`/proc/${w.pid}/status`, 'utf8')
      const field = (name: string) => Number(status().match(new RegExp(`^${name}:\\s+(\\d+)`, 'm'))![1])
      await new Promise((r) => setTimeout(r, 100))
      const before = field('voluntary_ctxt_switches') + field('nonvoluntary_ctxt_switches')
      await new Promise((r) => setTimeout(r, 700))
      const after = field('voluntary_ctxt_switches') + field('nonvoluntary_ctxt_switches')
      expect(after - before, 'context switches of the wrapper in 700 ms of its grace').toBeLessThanOrEqual(3)
      // The helper exits on its own: the wrapper notices by event (its SIGCHLD: it adopted it).
      const { code } = await exitOf(w, 20_000)
      expect(performance.now() - t0, 'ended by the helper\'s exit, long before the 60 s grace').toBeLessThan(20_000)
      expect(code).toBe(143)
      expect(isGone(helper)).toBe(true)
    } finally {
      rmSync(dir2, { recursive: true, force: true })
    }
  })

  // Not under the sanitizers (npm run test:sanitize): ASan's shadow memory and runtime are the
  // resident set there, not the supervisor's.
  it.runIf(linux && !process.env.REAPKIT_SANITIZE)('resident memory after start-up is under 4 MiB, and idle it does not wake up', async () => {
    const w = spawnGroup(BIN, ['--verbose', '--', 'sleep', '30'], { stdio: ['ignore', 'ignore', 'pipe'] })
    const events = jsonLines(w.stderr!)
    trackGroup((await events.next((m) => m.event === 'start')).pgid)
    await new Promise((r) => setTimeout(r, 200))
    const status = () => readFileSync(`/proc/${w.pid}/status`, 'utf8')
    const field = (name: string) => Number(status().match(new RegExp(`^${name}:\\s+(\\d+)`, 'm'))![1])
    expect(field('VmRSS'), 'kB').toBeLessThan(4096)
    const before = field('voluntary_ctxt_switches') + field('nonvoluntary_ctxt_switches')
    await new Promise((r) => setTimeout(r, 1000))
    const after = field('voluntary_ctxt_switches') + field('nonvoluntary_ctxt_switches')
    expect(after - before, 'context switches while idle for 1 s').toBe(0)
  })
})
