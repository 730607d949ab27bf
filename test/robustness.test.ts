import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { canUnshare, DIST, exitOf, FIXTURES, jsonLines, spawnFixture, spawnGroup } from './helpers'


describe('worker_threads', () => {
  it('200 rounds of worker.terminate() with live watchers: no crash, no thread or fd left behind', async () => {
    const child = spawnFixture('worker-churn.cjs', ['200'])
    const out = jsonLines(child.stdout!)
    const result = await out.next((m) => m.rounds === 200, 120_000, 'the churn result')
    expect(await exitOf(child, 30_000)).toEqual({ code: 0, signal: null })
    expect(result.delivered).toBe(50) // exits reach watchers inside workers too
    if (result.threadsBefore !== null) expect(result.threadsAfter).toBe(result.threadsBefore) // every watcher thread was joined
    expect(result.fdsAfter).toBe(result.fdsBefore) // every epoll set and pidfd was closed
  })
})

describe.runIf(canUnshare)('hostile input (in a private PID namespace, as root)', () => {
  it('every bad input gets its clear error before any syscall, and no signal reaches anyone', async () => {
    const ns = spawnGroup('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, `${FIXTURES}/bad-inputs.cjs`])
    const out = jsonLines(ns.stdout!)
    const msg = await out.next((m) => m.event === 'result' || m.event === 'error', 60_000, 'the table result')
    expect(msg.event, JSON.stringify(msg)).toBe('result')
    const failed = msg.results.filter((r: { ok: boolean }) => !r.ok)
    expect(failed).toEqual([])
    expect(msg.results.length).toBeGreaterThanOrEqual(70)
    const zero = { SIGUSR2: 0, SIGTERM: 0, SIGHUP: 0, SIGINT: 0, SIGWINCH: 0 }
    expect(msg.before).toEqual({ runner: zero, sameGroup: zero, otherGroup: zero })
    expect(msg.prctlUntouched).toBe(true)
    // The control: the same canaries do count a real signal.
    expect(msg.after.sameGroup.SIGUSR2).toBe(1)
    expect(msg.after.otherGroup.SIGUSR2).toBe(1)
    expect(await exitOf(ns)).toEqual({ code: 0, signal: null })
  })
})

describe.runIf(canUnshare)('out of file descriptors (in a private PID namespace)', () => {
  // A failure to watch or to list is never an exit: the target is always signalled, a resource error
  // is reported as such, and no status says 'terminated' for a process that runs.
  it('every stop still reaches its target and says it was uncertain; a bare pid that cannot be pinned is refused', async () => {
    const ns = spawnGroup('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, `${FIXTURES}/out-of-fds.cjs`], {
      env: { ...process.env, REAPKIT_DIST: DIST },
    })
    const out = jsonLines(ns.stdout!)
    const last = await out.next((m) => m.event === 'done' || m.event === 'error', 120_000, 'the last case')
    expect(last.event, JSON.stringify(last)).toBe('done')
    const cases: Record<string, any>[] = out.seen.filter((m) => m.event === 'case')
    expect(await exitOf(ns)).toEqual({ code: 0, signal: null })
    expect(cases.length).toBe(40)
    for (const c of cases) {
      const what = JSON.stringify(c)
      // Never a success that is not one: whatever still runs, the stop said it could not see all.
      if (c.alive.length > 0) expect(c.thrown !== null || c.uncertain, what).toBe(true)
      if (c.name.startsWith('out at the reap')) {
        // The group could not be proven either way: nothing signalled by its id, and said so.
        expect(c.uncertain, what).toBe(true)
        expect(c.error, what).toBe('EMFILE')
        continue
      }
      if (c.name === 'leader signalled once') {
        // One SIGINT reached the wrapper (by the group's id when the stop is uncertain, else by pin),
        // so it gave its command the grace and passed on the clean exit.
        expect(c.signalsSent.filter((x: string) => x.startsWith('SIGINT')).length, what).toBe(1)
        expect(c.escalated, what).toBe(false)
        expect(c.extra, what).toEqual({ code: 0, signalCode: null })
        expect(c.alive, what).toEqual([])
        continue
      }
      if (c.name === 'member signalled once') {
        // The wrapper, a pinned member, got its SIGINT from the group's killpg only: no second
        // one through its pin (which it would take for "force" and SIGKILL its command: 137).
        expect(c.signalsSent.filter((x: string) => x.startsWith('SIGINT')).length, what).toBe(1)
        expect(c.extra, what).toMatchObject({ code: 0, signal: null })
        expect(c.alive, what).toEqual([])
        continue
      }
      if (c.name === 'adopt') {
        expect(c.extra.pgid, what).toBe(c.extra.pid)
        expect(c.alive, what).toEqual([])
        expect(c.extra.status, what).toBe('terminated')
        continue
      }
      if (c.thrown !== null) {
        // Only a bare pid may be refused, with the system error, and then it was not signalled at all.
        expect(c.name, what).toBe('pid')
        expect(c.thrown, what).toBe('EMFILE')
        expect(c.alive, what).toEqual(c.pids)
        expect(c.extra.signalCode, what).toBe(null)
        continue
      }
      expect(c.alive, what).toEqual([])
      expect(c.survivors, what).toEqual([])
      expect(c.signalsSent[0], what).toMatch(/^SIGTERM/)
      expect(c.uncertain, what).toBe(c.error !== null)
      if (c.name.startsWith('supervisor')) {
        for (const e of [c.extra].flat()) expect(e, what).toEqual({ status: 'killed', exited: true })
      }
      if (c.free === 0 && c.name !== 'pid') expect(c.error, what).toBe('EMFILE')
    }
  })
})

describe.runIf(canUnshare)('a child reaped in the same batch as another (in a private PID namespace)', () => {
  it('its pid handed to a stranger inside the first exit listener: the stranger gets no signal', () => {
    const r = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, `${FIXTURES}/batch-reap.cjs`], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, REAPKIT_DIST: DIST },
    })
    expect(r.status, r.stderr).toBe(0)
    const rounds = r.stdout.trim().split('\n').map((l) => JSON.parse(l))
    expect(rounds.length).toBe(2)
    for (const round of rounds) {
      const what = JSON.stringify(round)
      expect(round.reapedUnreported && round.reused, `the race was not set up: ${what}`).toBe(true)
      expect(round.strangerAlive, what).toBe(true)
      expect(round.result.signalsSent, what).toEqual([])
    }
  })
})

describe.runIf(process.platform === 'linux')('pidfd_open blocked by seccomp', () => {
  it('falls back at run time, works, and says so in capabilities()', () => {
    const cc = process.env.CC || 'cc'
    if (spawnSync(cc, ['--version'], { stdio: 'ignore' }).status !== 0) return expect.fail(`no C compiler (${cc}) to build the seccomp launcher`)
    const dir = mkdtempSync(join(tmpdir(), 'reapkit-seccomp-'))
    try {
      const launcher = join(dir, 'no-pidfd')
      const build = spawnSync(cc, ['-O2', '-o', launcher, join(FIXTURES, 'no-pidfd.c')], { encoding: 'utf8' })
      expect(build.status, build.stderr).toBe(0)
      const run = spawnSync(launcher, [process.execPath, join(FIXTURES, 'no-pidfd.cjs')], {
        encoding: 'utf8',
        timeout: 30_000,
        env: { ...process.env, REAPKIT_DIST: DIST, REAPKIT_EXIT_POLL_MS: '20' },
      })
      expect(run.status, run.stderr).toBe(0)
      const out = JSON.parse(run.stdout.trim().split('\n').pop()!)
      expect(out.caps).toMatchObject({ native: true, pidfd: false, exitWatch: 'poll', parentWatch: 'poll', pdeathsig: true })
      expect(out).toMatchObject({ watched: true, afterExit: 'ESRCH', parentMechanism: 'poll', parentDeathSignal: 'SIGUSR2', armed: 'SIGUSR2' })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
