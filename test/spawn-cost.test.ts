// What spawn() and the Supervisor's restart stopped doing to be cheaper (issue 32 item 7), each
// beside the guarantee it must keep:
// - the look right after the reap: a group provably empty (kill(-pgid, 0): ESRCH) is gone at once,
//   without a scan of the process table; a group with a member left is still listed and stopped;
// - the exec helper execs the file spawn() found on PATH (no search of its own): the file execvp
//   would run, in PATH order, skipping what execvp skips, with the caller's argv0 and spawnfile;
// - a restart without backoff waits on no timer (an immediate), and is still cancelled by a stop
//   that comes while it waits for the last incarnation's leftovers; a start that fails at once
//   (ENOENT) restarted without backoff still lets the event loop turn between restarts;
// - a stop skips its check for this process only for a child spawn() pinned: an object merely
//   shaped like a ChildProcess with this process's pid (or a thread's) is still refused.
// Real processes; each test ends what it started (by pid or group), and bounds every wait.
import { spawn as nodeSpawn, spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { killProcessGracefully, spawn, spawnedInfo } from '../lib/index'
import { Restarter, restartSpec } from '../lib/policies/supervisor/restart'
import { DIST, FIXTURES, exitOf, isGone, trackGroup, waitFor } from './helpers'
import { cleanupAfterEach, settled } from './supervisor-cleanup'

const linux = process.platform === 'linux'
const posix = process.platform !== 'win32'
const { supervise } = cleanupAfterEach()
const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** Collects a child's stdout as text. */
/** What it wrote by its exit (a member it left may hold its stdout open long after). */
function output(child: ReturnType<typeof spawn>): Promise<string> {
  let out = ''
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d))
  return exitOf(child).then(() => out)
}

/** All it wrote: at 'close' (its stdout ended); 'exit' may come before the last data. */
function wholeOutput(child: ReturnType<typeof spawn>): Promise<string> {
  let out = ''
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d))
  return new Promise((resolve) => child.once('close', () => resolve(out)))
}

describe.runIf(posix)('the look right after the reap', () => {
  it('declares a group that nothing is left in gone by the first exit listener, without a scan', async () => {
    const child = spawn('true', [], { stdio: 'ignore' })
    trackGroup(child.pid!)
    const atExit = await new Promise<boolean>((resolve) => child.once('exit', () => resolve(spawnedInfo(child)!.groupGone)))
    expect(spawnedInfo(child)!.pgid).toBe(child.pid)
    expect(atExit).toBe(true)
  })

  it('keeps a group with a member left (not gone at the exit), and a stop still finds and ends that member', async () => {
    const child = spawn('sh', ['-c', 'sleep 30 & echo $!'], { stdio: ['ignore', 'pipe', 'ignore'] })
    trackGroup(child.pid!)
    const out = await output(child)
    const member = Number(out.trim())
    expect(Number.isInteger(member) && member > 1).toBe(true)
    expect(isGone(member)).toBe(false)
    const info = spawnedInfo(child)!
    expect(info.groupGone).toBe(false)
    const report = await killProcessGracefully(child, { graceMs: 2000 })
    await waitFor(() => isGone(member), 5000, 'the member the leader left to end')
    expect(report.survivors).toEqual([])
    expect(info.groupGone).toBe(true)
  })
})

describe.runIf(linux)('the exec helper runs the file spawn() found', () => {
  it('runs the first executable file on PATH, skipping a directory and a file without x, as execvp; argv0 and spawnfile stay the caller\'s', async () => {
    const root = mkdtempSync(join(tmpdir(), 'reapkit-spawn-cost-'))
    dirs.push(root)
    const [asDir, notExec, first, second] = ['a', 'b', 'c', 'd'].map((d) => join(root, d))
    for (const d of [asDir, notExec, first, second]) mkdirSync(d)
    mkdirSync(join(asDir, 'rk-which')) // a directory passes access(X_OK): execvp skips it (EACCES)
    writeFileSync(join(notExec, 'rk-which'), '#!/bin/sh\necho b\n') // no x bit
    for (const [d, tag] of [[first, 'c'], [second, 'd']] as const) {
      writeFileSync(join(d, 'rk-which'), `#!/bin/sh\necho ${tag} "$0"\n`)
      chmodSync(join(d, 'rk-which'), 0o755)
    }
    const env = { ...process.env, PATH: [asDir, notExec, first, second].join(':') }
    const ours = spawn('rk-which', [], { env, stdio: ['ignore', 'pipe', 'ignore'] })
    trackGroup(ours.pid!)
    expect(spawnedInfo(ours)!.startup).toBe('exec') // through the helper
    expect(ours.spawnfile).toBe('rk-which')
    expect(ours.spawnargs).toEqual(['rk-which'])
    const theirs = nodeSpawn('rk-which', [], { env, stdio: ['ignore', 'pipe', 'ignore'] })
    const [a, b] = await Promise.all([wholeOutput(ours), wholeOutput(theirs)])
    expect(a).toBe(b) // the same file, as Node's execvp would run it
    expect(a.startsWith('c ')).toBe(true)
  })

  it('gives the target the caller\'s argv0, not the path it was found at', async () => {
    const child = spawn('sleep', ['30'], { argv0: 'rk-argv0', stdio: 'ignore' })
    trackGroup(child.pid!)
    try {
      await waitFor(() => readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').startsWith('rk-argv0\0'), 5000, 'argv0 in cmdline')
    } finally {
      child.kill('SIGKILL')
      await exitOf(child)
    }
  })
})

describe.runIf(posix)('a restart without backoff', () => {
  it('is cancelled by terminate() while it waits for the leftovers of the last incarnation (no new incarnation)', async () => {
    const { sup, events } = supervise({ graceMs: 1500 })
    // The leader exits 1 at once; what it left ignores SIGTERM, so the leftovers' stop lasts the grace.
    const child = sup.spawn('sh', ['-c', `sh -c 'trap "" TERM; while :; do sleep 0.05; done' & sleep 0.2; exit 1`], {
      requestId: 'nb',
      stdio: 'ignore',
      restart: 'on-failure',
      backoff: { initialMs: 0, jitter: 0 },
    })
    const pid = child.pid!
    await settled(sup, 'nb', 'restarting', 10_000)
    await new Promise((r) => setTimeout(r, 100)) // well past a 1 ms timer: the wait is the leftovers' stop
    expect(sup.get('nb')!.status).toBe('restarting')
    await sup.terminate(pid)
    await new Promise((r) => setTimeout(r, 300))
    expect(events.filter((e) => e === 'spawn')).toHaveLength(1)
    expect(events).not.toContain('restart')
    expect(['terminated', 'killed']).toContain(sup.get('nb')!.status)
  })

  it('of a command that cannot start (ENOENT) lets the event loop turn between restarts (timers run before the give-up)', async () => {
    const { sup, events } = supervise()
    let ticks = 0
    const interval = setInterval(() => ticks++, 1)
    const ticksAtRestart: number[] = []
    sup.on('restart', () => ticksAtRestart.push(ticks))
    try {
      const gaveUp = new Promise<void>((res) => sup.once('give-up', () => res()))
      sup.spawn('/nonexistent/reapkit-cmd', [], { requestId: 'enoent', stdio: 'ignore', restart: 'always', backoff: { initialMs: 0, jitter: 0 }, intensity: { maxRestarts: 300, windowMs: 600_000 } })
      let bound: NodeJS.Timeout | undefined
      await Promise.race([gaveUp, new Promise((_, rej) => (bound = setTimeout(() => rej(new Error('no give-up within 60 s')), 60_000)))])
      clearTimeout(bound)
    } finally {
      clearInterval(interval)
    }
    expect(events).toContain('give-up')
    expect(ticksAtRestart).toHaveLength(300)
    // With restarts chained on microtasks alone, no timer ran until the give-up: 0 ticks all along.
    expect(ticksAtRestart.findIndex((t) => t > 0)).toBeGreaterThanOrEqual(0)
    expect(ticksAtRestart.findIndex((t) => t > 0)).toBeLessThan(150)
    expect(ticksAtRestart[299]).toBeGreaterThanOrEqual(3)
  })
})

describe('Restarter.schedule', () => {
  it('a wait cancelled and then scheduled over starts once: the older wait, its `before` settled late, starts nothing', async () => {
    const restarter = new Restarter(restartSpec({ restart: 'always', backoff: { initialMs: 0, jitter: 0 } })!)
    const started: string[] = []
    let release!: () => void
    const slow = new Promise<void>((res) => (release = res))
    restarter.schedule(0, slow, () => started.push('older'))
    expect(restarter.cancel()).toBe(true)
    restarter.schedule(0, Promise.resolve(), () => started.push('newer'))
    await new Promise((r) => setTimeout(r, 20))
    release()
    await new Promise((r) => setTimeout(r, 20))
    expect(started).toEqual(['newer'])
    expect(restarter.pending).toBe(false)
  })
})

describe.runIf(linux)('a stop of an object shaped like a ChildProcess (not spawned by reapkit)', () => {
  /** Runs the fixture (its own process: a missing refusal SIGTERMs it, not this runner); its JSON line. */
  function stopSelfShaped(which: 'pid' | 'thread') {
    const r = spawnSync(process.execPath, [join(FIXTURES, 'self-shaped-child.cjs'), which], { encoding: 'utf8', timeout: 20_000, env: { ...process.env, REAPKIT_DIST: DIST } })
    expect({ status: r.status, signal: r.signal }, r.stderr).toEqual({ status: 0, signal: null })
    return JSON.parse(r.stdout.trim().split('\n').pop()!)
  }

  it("with this process's pid is refused (ERR_REAPKIT_SELF), not signalled", () => {
    expect(stopSelfShaped('pid')).toEqual({ outcome: 'rejected', code: 'ERR_REAPKIT_SELF', name: 'RangeError' })
  })

  it("with the id of one of this process's threads is refused too", () => {
    const seen = stopSelfShaped('thread')
    if (seen.skipped) return // Node always runs threads (its platform workers); kept for a build without
    expect(seen).toEqual({ outcome: 'rejected', code: 'ERR_REAPKIT_SELF', name: 'RangeError' })
  })
})
