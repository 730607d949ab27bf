// `reapkit --` with the command in a cgroup of its own (Linux, cgroup v2, where one is ours to write:
// the library's rule, capabilities().cgroup). Real processes and real cgroups: the stop's first
// signal goes to every member of cgroup.procs, the forced phase is cgroup.kill, "gone" is the
// kernel's `populated 0`, and no /proc file is read while the stop runs. Everything runs inside a
// private PID namespace (test/fixtures/wrapper-cgroup.sh sends signals): the namespace, and all in
// it, dies with the script; any cgroup a run left is killed and removed here.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { removeCgroups, wrapperEvents } from './cgroup-lib'
import { canUnshare, DIST, FIXTURES, jsonLines, ROOT, waitFor } from './helpers'

const BIN = join(ROOT, 'bin', 'reapkit')
const SCRIPT = join(FIXTURES, 'wrapper-cgroup.sh')
const cgroup: { available: boolean; reason?: string } =
  process.platform === 'linux' ? require(DIST).capabilities().cgroup : { available: false, reason: 'not Linux' }
const haveStrace = process.platform === 'linux' && spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0
const dir = mkdtempSync(join(tmpdir(), 'reapkit-cli-cgroup-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Cgroups the runs made: killed and removed after each test whatever happened (bounded). */
const made: string[] = []
afterEach(() => removeCgroups(made.splice(0)))

let runs = 0
/** One run of the fixture: the wrapper's events, the escapees' fate, its trace (STRACE=1). */
function run(options: string[], strace = false, obey = false) {
  const out = join(dir, `run-${++runs}`)
  mkdirSync(out)
  const r = spawnSync('unshare', ['--pid', '--kill-child', '--fork', '--mount-proc', 'sh', SCRIPT, BIN, out, ...options], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, STRACE: strace ? '1' : '', OBEY: obey ? '1' : '' },
  })
  const { events, start } = wrapperEvents(out, made)
  const escapees = r.stdout.split('\n').filter((l) => l.startsWith('escapee ')).map((l) => l.split(' ')[2])
  const trace = strace ? readFileSync(join(out, 'strace'), 'utf8') : ''
  return { r, events, start, escapees, trace, stop: events.find((e) => e.event === 'stop'), exit: events.find((e) => e.event === 'exit'), cg: events.find((e) => e.event === 'cgroup') }
}

/** The /proc files the wrapper opened after it received the stop's SIGTERM (its strace). */
function procOpensAfterStop(trace: string): string[] {
  const lines = trace.split('\n')
  const at = lines.findIndex((l) => l.startsWith('--- SIGTERM'))
  expect(at, 'the trace shows the SIGTERM').toBeGreaterThanOrEqual(0)
  return lines.slice(at).filter((l) => /^open(at)?\(.*"\/proc\//.test(l))
}

describe.runIf(process.platform === 'linux')('reapkit -- command, its cgroup', () => {
  it.skipIf(!cgroup.available || !canUnshare)('a setsid escapee and a double-forked SIGTERM-ignoring daemon are gone after the stop; cgroup.kill ends it, no /proc is read, the cgroup is removed', () => {
    const { r, start, stop, exit, cg, escapees } = run([])
    expect(r.status, r.stderr).toBe(0)
    expect(start.cgroup).toMatch(/\/reapkit-[A-Za-z0-9.-]+_[0-9a-f]{32}_[0-9]+_[0-9]+_[0-9]+_0_1$/)
    expect(stop.unit).toBe('cgroup')
    expect(escapees).toEqual(['gone', 'gone'])
    expect(cg).toMatchObject({ path: start.cgroup, killed: true, removed: true }) // the daemon ignored SIGTERM: cgroup.kill
    // The command, the setsid child, the daemon; and the daemon's `sleep 0.2` only when one runs at
    // the listing: between two, on a busy machine, the daemon has no child (3 members, seen once).
    expect(cg.members, JSON.stringify(cg)).toBeGreaterThanOrEqual(3)
    expect(exit).toMatchObject({ code: 143, survivors: 0, procReadsInStop: 0 })
    expect(existsSync(start.cgroup)).toBe(false)
  })

  it.skipIf(!cgroup.available || !canUnshare)('escapees that obey SIGTERM: the stop ends at the kernel\'s populated 0 (an inotify event), no escalation, no cgroup.kill', () => {
    const { r, events, start, stop, exit, cg, escapees } = run([], false, true)
    expect(r.status, r.stderr).toBe(0)
    expect(stop.unit).toBe('cgroup')
    expect(escapees).toEqual(['gone', 'gone'])
    expect(events.find((e) => e.event === 'escalate')).toBeUndefined()
    expect(cg).toMatchObject({ path: start.cgroup, killed: false, removed: true })
    expect(cg.events).toBeGreaterThan(0)
    expect(exit).toMatchObject({ code: 143, survivors: 0, procReadsInStop: 0 })
  })

  it.skipIf(!cgroup.available)('doctor recognizes the wrapper\'s cgroup by its name: not listed while the wrapper lives, a leftover once it is SIGKILLed with an escapee inside', async () => {
    const w = spawn(BIN, ['--verbose', '--', 'sh', '-c', 'setsid sleep 1000 & echo $!; exec sleep 1000'], { stdio: ['ignore', 'pipe', 'pipe'] })
    const exited = new Promise((res) => w.once('exit', res))
    try {
      const events = jsonLines(w.stderr!)
      const start = await events.next((e: any) => e.event === 'start', 10_000)
      made.push(start.cgroup)
      let out = ''
      w.stdout!.on('data', (d) => (out += d))
      await waitFor(() => /^\d+\n/.test(out), 10_000, 'the escapee to start')
      const escapee = Number(out.trim())
      const r = require(DIST)
      const listed = (rep: any) => [...rep.leaked, ...rep.foreign].find((c: any) => c.path === start.cgroup)
      expect(listed(await r.findLeakedCgroups())).toBeUndefined() // its maker, the wrapper, is alive
      w.kill('SIGKILL')
      await exited
      const leftover = (await r.findLeakedCgroups()).leaked.find((c: any) => c.path === start.cgroup)
      expect(leftover, 'listed as leaked').toBeDefined()
      expect(leftover.owner).toMatchObject({ pid: w.pid, thread: 0, seq: 1 })
      expect(leftover.members.map((m: any) => m.pid)).toContain(escapee)
    } finally {
      w.kill('SIGKILL')
      await exited
    }
  })

  it.skipIf(!cgroup.available || !canUnshare || !haveStrace)('strace of the wrapper: no /proc file opened after the SIGTERM on the cgroup path; the subreaper path (--no-cgroup) reads /proc then', () => {
    const withCgroup = run([], true)
    expect(withCgroup.stop.unit).toBe('cgroup')
    expect(withCgroup.escapees).toEqual(['gone', 'gone'])
    expect(procOpensAfterStop(withCgroup.trace)).toEqual([])
    expect(withCgroup.trace).toMatch(/openat\(\d+, "cgroup\.kill"/) // the forced phase, through the cgroup's descriptor
    // The same check on the subreaper path finds its scan: it would fail if the cgroup path scanned.
    const without = run(['--no-cgroup'], true)
    expect(without.stop.unit).toBe('tree')
    expect(procOpensAfterStop(without.trace).length).toBeGreaterThan(0)
  })

  it.skipIf(!canUnshare)('--no-cgroup (and REAPKIT_CGROUP=0) take the subreaper path: no cgroup, the escapees still gone, /proc read during the stop', () => {
    const { r, start, stop, exit, cg, escapees } = run(['--no-cgroup'])
    expect(r.status, r.stderr).toBe(0)
    expect(start).toMatchObject({ cgroup: null, cgroupReason: '--no-cgroup', subreaper: true })
    expect(stop.unit).toBe('tree')
    expect(cg).toBeUndefined()
    expect(escapees).toEqual(['gone', 'gone'])
    expect(exit.procReadsInStop).toBeGreaterThan(0)
    const env = spawnSync(BIN, ['--verbose', '--', 'true'], { encoding: 'utf8', env: { ...process.env, REAPKIT_CGROUP: '0' }, timeout: 30_000 })
    const started = env.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).find((e) => e.event === 'start')
    expect(started).toMatchObject({ cgroup: null, cgroupReason: '--no-cgroup' })
  })

  it.skipIf(cgroup.available)('where no cgroup v2 is ours, the wrapper says why and stops through the subreaper', () => {
    const r = spawnSync(BIN, ['--verbose', '--', 'true'], { encoding: 'utf8', timeout: 30_000 })
    const started = r.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).find((e) => e.event === 'start')
    expect(started.cgroup).toBeNull()
    expect(started.cgroupReason).not.toBe('')
  })

  it('--help names --no-cgroup', () => {
    expect(spawnSync(BIN, ['--help'], { encoding: 'utf8' }).stdout).toMatch(/--no-cgroup/)
  })
})
