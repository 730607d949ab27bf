// Supervisor restart policies, typed events and metrics(), with real processes. Every incarnation
// is tracked for the after-test cleanup through the 'spawn' event; each test also shuts its
// supervisor down. Bounds are generous (a busy 2-core machine): ordering, not tight timings.
import { createRequire } from 'node:module'
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { type ProcessRecord, registerSupervisorMetrics, Supervisor } from '../lib/index'
import { backoffMs, Restarter, restartSpec } from '../lib/policies/supervisor/restart'
import { exitOf, isGone, jsonLines, spawnFixture, trackGroup, waitFor } from './helpers'
import { scrape } from './prometheus'
import { cleanupAfterEach, settled } from './supervisor-cleanup'

const posix = process.platform !== 'win32'
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const { supervise, tempDir } = cleanupAfterEach()

/** A shell child that counts its starts in a file: it exits 1 the first `crashes` times, then stays up. */
function crashesThenStays(dir: string, crashes: number): string[] {
  const file = join(dir, 'count')
  return ['-c', `n=$(cat ${file} 2>/dev/null || echo 0); n=$((n+1)); echo $n > ${file}; [ $n -le ${crashes} ] && exit 1; exec sleep 1000`]
}

describe.runIf(posix)('Supervisor restart policies', () => {
  it("'on-failure' restarts a crashing child with growing delays, same id, every incarnation recorded; then it stays up", async () => {
    const dir = tempDir('reapkit-restart-')
    const { sup, events } = supervise()
    const first = sup.spawn('sh', crashesThenStays(dir, 3), {
      requestId: 'github',
      stdio: 'ignore',
      restart: 'on-failure',
      backoff: { initialMs: 150, factor: 2, jitter: 0 },
    })
    await waitFor(() => (sup.get('github')?.restarts ?? 0) === 3 && sup.get('github')?.status === 'running', 30_000, '3 restarts')
    const r = sup.get('github')!
    expect(r.incarnations).toHaveLength(4)
    expect(r.incarnations[0]!.pid).toBe(first.pid)
    expect(new Set(r.incarnations.map((i) => i.pid)).size).toBe(4)
    expect(r.pid).toBe(r.incarnations[3]!.pid)
    expect(r.incarnations.map((i) => i.reason)).toEqual(['start', 'failure', 'failure', 'failure'])
    expect(r.incarnations.map((i) => i.delayMs)).toEqual([0, 150, 300, 600])
    expect(r.incarnations.slice(0, 3).map((i) => i.exitCode)).toEqual([1, 1, 1])
    for (let i = 1; i < 4; i++) {
      const gap = r.incarnations[i]!.startedAt.getTime() - r.incarnations[i - 1]!.exitedAt!.getTime()
      expect(gap, `gap before incarnation ${i}`).toBeGreaterThanOrEqual(r.incarnations[i]!.delayMs - 5)
    }
    expect(isGone(r.pid)).toBe(false)
    expect(events).toEqual(['spawn', ...Array(3).fill(['exit', 'restart', 'spawn']).flat()])
  })

  it("'on-failure' gives a crash loop up after the intensity limit: one event, a status that says so, no further start", async () => {
    const { sup, events } = supervise()
    const giveUps: ProcessRecord[] = []
    sup.on('give-up', (r) => giveUps.push(r))
    sup.spawn('sh', ['-c', 'exit 3'], { requestId: 'loop', stdio: 'ignore', restart: 'on-failure', backoff: { initialMs: 50, jitter: 0 }, intensity: { maxRestarts: 3, windowMs: 60_000 } })
    await settled(sup, 'loop', 'given-up')
    const r = sup.get('loop')!
    expect(r).toMatchObject({ status: 'given-up', restarts: 3, exitCode: 3, nextStartAt: null })
    expect(r.incarnations).toHaveLength(4)
    expect(giveUps).toHaveLength(1)
    expect(giveUps[0]).toMatchObject({ requestId: 'loop', status: 'given-up', restarts: 3 })
    await sleep(1500)
    expect(events).toEqual(['spawn', ...Array(3).fill(['exit', 'restart', 'spawn']).flat(), 'exit', 'give-up'])
    const m = sup.metrics()
    expect(m).toMatchObject({ starts: 4, restarts: 3, givenUp: 1, exits: { total: 4, byCode: { 3: 4 }, bySignal: {} } })
    expect(m.children['given-up']).toBe(1)
  })

  it("'always' restarts a clean exit; 'on-failure' does not", async () => {
    const { sup } = supervise()
    sup.spawn('sh', ['-c', 'exit 0'], { requestId: 'always', stdio: 'ignore', restart: 'always', backoff: { initialMs: 20 }, intensity: { maxRestarts: 2 } })
    sup.spawn('sh', ['-c', 'exit 0'], { requestId: 'clean', stdio: 'ignore', restart: 'on-failure', backoff: { initialMs: 20 } })
    await settled(sup, 'always', 'given-up')
    expect(sup.get('always')!.incarnations.map((i) => i.reason)).toEqual(['start', 'exit', 'exit'])
    await settled(sup, 'clean', 'exited')
    await sleep(500)
    expect(sup.get('clean')).toMatchObject({ status: 'exited', restart: 'on-failure', restarts: 0, exitCode: 0 })
  })

  it("'never' is the default: a crash is the end", async () => {
    const { sup, events } = supervise()
    sup.spawn('sh', ['-c', 'exit 1'], { requestId: 'once', stdio: 'ignore' })
    await settled(sup, 'once', 'exited')
    await sleep(800)
    expect(sup.get('once')).toMatchObject({ status: 'exited', restart: 'never', restarts: 0, exitCode: 1 })
    expect(sup.get('once')!.incarnations).toHaveLength(1)
    expect(events).toEqual(['spawn', 'exit'])
  })

  it('terminate during a backoff cancels it at once: no start after it, no timer left behind', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
    const before = timers()
    const { sup, events } = supervise()
    sup.spawn('sh', ['-c', 'exit 1'], { requestId: 'slow', stdio: 'ignore', restart: 'on-failure', backoff: { initialMs: 4000, jitter: 0 } })
    await settled(sup, 'slow', 'restarting')
    expect(sup.get('slow')!.nextStartAt).toBeInstanceOf(Date)
    const t0 = performance.now()
    const result = await sup.terminate('slow')
    expect(performance.now() - t0).toBeLessThan(2000) // not the 4 s backoff
    expect(result.escalated).toBe(false)
    expect(sup.get('slow')).toMatchObject({ status: 'terminated', restarts: 0, nextStartAt: null })
    expect(timers()).toBeLessThanOrEqual(before)
    await sleep(5000) // past the backoff it would have waited
    expect(events).toEqual(['spawn', 'exit', 'terminate'])
    expect(sup.get('slow')!.incarnations).toHaveLength(1)
  })

  it('a child stopped by the supervisor (terminate, then shutdownAll) is never restarted', async () => {
    const { sup, events } = supervise()
    sup.spawn('sleep', ['1000'], { requestId: 'a', stdio: 'ignore', restart: 'always', backoff: { initialMs: 10 } })
    sup.spawn('sleep', ['1000'], { requestId: 'b', stdio: 'ignore', restart: 'always', backoff: { initialMs: 10 } })
    const a = sup.get('a')!.pid
    await sup.terminate('a')
    const reports = await sup.shutdownAll()
    expect(reports).toHaveLength(1)
    await sleep(800)
    expect(sup.get('a')).toMatchObject({ status: 'terminated', restarts: 0, signal: 'SIGTERM' })
    expect(sup.get('b')).toMatchObject({ status: 'terminated', restarts: 0, signal: 'SIGTERM' })
    expect(isGone(a)).toBe(true)
    expect(events.filter((e) => e === 'spawn')).toHaveLength(2)
    expect(events.filter((e) => e === 'restart')).toEqual([])
  })

  it('a child that exits while its supervisor is shutting down is not restarted', async () => {
    const { sup, events } = supervise({ closeTimeoutMs: 5000 })
    sup.spawn('sleep', ['1000'], { requestId: 'slow-to-close', stdio: 'ignore' })
    let shutdownDone = false
    const shutdown = sup.shutdownAll().then(() => (shutdownDone = true)) // phase 1 alone waits 5 s on it
    await sleep(100)
    sup.spawn('sh', ['-c', 'exit 1'], { requestId: 'late', stdio: 'ignore', restart: 'always', backoff: { initialMs: 10 } })
    await settled(sup, 'late', 'exited', 10_000)
    expect(shutdownDone).toBe(false) // it did exit while the supervisor was shutting down
    await shutdown
    await sleep(300)
    expect(sup.get('late')).toMatchObject({ status: 'exited', restarts: 0 })
    expect(events.filter((e) => e === 'restart')).toEqual([])
  })

  it('shutdownAll during a restart storm leaves nothing running and starts nothing after', async () => {
    const { sup, events } = supervise()
    const pids = new Set<number>()
    sup.on('spawn', (r) => pids.add(r.pid))
    const opts = { stdio: 'ignore', restart: 'always', backoff: { initialMs: 30, maxMs: 100 }, intensity: { maxRestarts: 10_000 } } as const
    for (let i = 0; i < 4; i++) sup.spawn('sh', ['-c', 'sleep 0.05; exit 1'], { ...opts, requestId: `crash-${i}` })
    for (let i = 0; i < 2; i++) sup.spawn('sleep', ['1000'], { ...opts, requestId: `up-${i}` })
    await waitFor(() => sup.metrics().restarts >= 12, 30_000, 'a dozen restarts')
    await sup.shutdownAll()
    const starts = sup.metrics().starts
    for (const r of sup.list()) expect(['exited', 'terminated', 'killed'], `${r.requestId}: ${r.status}`).toContain(r.status)
    await sleep(1000)
    expect(sup.metrics().starts).toBe(starts)
    for (const pid of pids) expect(isGone(pid), `pid ${pid}`).toBe(true)
    expect(sup.metrics().children).toMatchObject({ running: 0, restarting: 0 })
    expect(events.lastIndexOf('spawn')).toBeLessThan(events.length - 1)
  })

  it("what a crashed incarnation left in its group is stopped before the next one starts", async () => {
    const dir = tempDir('reapkit-restart-')
    const pids = join(dir, 'pids')
    const { sup } = supervise()
    sup.spawn('sh', ['-c', `sleep 1000 & echo $! >> ${pids}; exit 1`], { requestId: 'leaky', stdio: 'ignore', restart: 'on-failure', backoff: { initialMs: 50 }, intensity: { maxRestarts: 1 } })
    await settled(sup, 'leaky', 'given-up')
    const [first, second] = readFileSync(pids, 'utf8').trim().split('\n').map(Number)
    expect(sup.get('leaky')!.incarnations.map((i) => i.pid)).toHaveLength(2)
    expect(isGone(first!)).toBe(true) // stopped before the restart
    expect(isGone(second!)).toBe(false) // an exit that is not restarted leaves its group to terminate/shutdownAll, as before
    await sup.shutdownAll()
    expect(isGone(second!)).toBe(true)
  })

  it('a restart whose command is gone counts as a failure: the child is given up, the host does not crash', async () => {
    const dir = tempDir('reapkit-restart-')
    const script = join(dir, 'server.sh')
    writeFileSync(script, '#!/bin/sh\nexit 1\n', { mode: 0o755 })
    const { sup } = supervise()
    sup.spawn(script, [], { requestId: 'vanishing', stdio: 'ignore', restart: 'on-failure', backoff: { initialMs: 300, jitter: 0 }, intensity: { maxRestarts: 2 } })
    await settled(sup, 'vanishing', 'restarting')
    rmSync(script)
    await settled(sup, 'vanishing', 'given-up')
    expect(sup.get('vanishing')!.incarnations[0]).toMatchObject({ exitCode: 1, reason: 'start' })
  })

  it('metrics() matches the events one for one', async () => {
    const { sup } = supervise()
    const counts: Record<string, number> = {}
    for (const name of ['spawn', 'exit', 'restart', 'give-up', 'terminate', 'escalate'] as const) sup.on(name, () => (counts[name] = (counts[name] ?? 0) + 1))
    sup.spawn('sh', ['-c', 'exit 2'], { requestId: 'crash', stdio: 'ignore', restart: 'on-failure', backoff: { initialMs: 20 }, intensity: { maxRestarts: 2 } })
    sup.spawn('sh', ['-c', 'kill -9 $$'], { requestId: 'sig', stdio: 'ignore' })
    const dir = tempDir('reapkit-restart-')
    const trapped = join(dir, 'trapped')
    sup.spawn('sh', ['-c', `trap '' TERM; : > ${trapped}; sleep 1000`], { requestId: 'stubborn', stdio: 'ignore' })
    sup.spawn('sleep', ['1000'], { requestId: 'polite', stdio: 'ignore' })
    await settled(sup, 'crash', 'given-up')
    await settled(sup, 'sig', 'exited')
    await waitFor(() => existsSync(trapped), 10_000, 'the trap to be set')
    await sup.terminate('stubborn', { graceMs: 300 })
    await sup.terminate('polite')
    const m = sup.metrics()
    expect(m.starts).toBe(counts.spawn)
    expect(m.starts).toBe(6)
    expect(m.exits.total).toBe(counts.exit)
    expect(m.exits).toEqual({ total: 6, byCode: { 2: 3 }, bySignal: { SIGKILL: 2, SIGTERM: 1 } })
    expect(m.restarts).toBe(counts.restart)
    expect(m.givenUp).toBe(counts['give-up'])
    expect(m.stops).toBe(counts.terminate)
    expect(m.stops).toBe(2)
    expect(m.escalations).toBe(counts.escalate)
    expect(m.escalations).toBe(1)
    expect(m.survivors).toBe(0)
    expect(m.stopDurationMs.count).toBe(2)
    expect(m.stopDurationMs.buckets.at(-1)).toEqual({ le: '+Inf', count: 2 })
    expect(m.stopDurationMs.sum).toBeGreaterThanOrEqual(300) // the stubborn one's grace
    expect(m.children).toEqual({ starting: 0, running: 0, adopted: 0, restarting: 0, exited: 1, terminated: 1, killed: 1, 'start-failed': 0, 'given-up': 1 })
    expect(m.stopsByReason).toEqual({ terminate: 2, shutdown: 0, unhealthy: 0, 'not-ready': 0 })
    // JSON has no Infinity: the last bucket says '+Inf', as Prometheus writes it (not null), as
    // plain data: a clone or a spread of the snapshot says it too (a hidden toJSON did not survive them).
    expect(JSON.parse(JSON.stringify(m)).stopDurationMs.buckets.at(-1)).toEqual({ le: '+Inf', count: 2 })
    expect(JSON.parse(JSON.stringify(structuredClone(m))).stopDurationMs.buckets.at(-1)).toEqual({ le: '+Inf', count: 2 })
    expect(JSON.parse(JSON.stringify({ ...m.stopDurationMs.buckets.at(-1) }))).toEqual({ le: '+Inf', count: 2 })
  })

  it('bad restart options are refused before anything starts', () => {
    const { sup, events } = supervise()
    const bad = [
      [{ restart: 'sometimes' }, TypeError, 'ERR_INVALID_ARG_VALUE'],
      [{ restart: 'always', backoff: { initialMs: -1 } }, RangeError, 'ERR_OUT_OF_RANGE'],
      [{ restart: 'always', backoff: { jitter: 2 } }, RangeError, 'ERR_OUT_OF_RANGE'],
      [{ restart: 'always', backoff: { factor: '2' } }, TypeError, 'ERR_INVALID_ARG_TYPE'],
      [{ restart: 'always', intensity: { maxRestarts: 1.5 } }, RangeError, 'ERR_OUT_OF_RANGE'],
      [{ restart: 'always', intensity: null }, TypeError, 'ERR_INVALID_ARG_TYPE'],
    ] as const
    for (const [options, type, code] of bad) {
      expect(() => sup.spawn('sleep', ['1000'], options as never), JSON.stringify(options)).toThrow(type)
      try {
        sup.spawn('sleep', ['1000'], options as never)
      } catch (err) {
        expect((err as { code: string }).code).toBe(code)
      }
    }
    expect(events).toEqual([])
    expect(sup.list()).toEqual([])
  })
})

describe.runIf(process.platform === 'linux')('Supervisor restart policies and the stateFile', () => {
  it('a supervisor SIGKILLed mid-backoff: nothing starts on its own, the next one continues the intensity window and refuses a second copy of an adopted child', async () => {
    const dir = tempDir('reapkit-restart-state-')
    const file = join(dir, 'supervisor.json')
    const log = join(dir, 'starts.log')
    const host = spawnFixture('restart-host.cjs', [file, log])
    const ready = await jsonLines(host.stdout!).next((m) => m.event === 'ready', 20_000, 'the host')
    trackGroup(ready.db)
    process.kill(host.pid!, 'SIGKILL')
    await exitOf(host)
    const starts = () => readFileSync(log, 'utf8').trim().split('\n').length
    expect(starts()).toBe(2)
    const { sup, events } = supervise({ stateFile: file, onLeftovers: 'adopt' })
    const leftovers = (await sup.leftovers)!
    expect(leftovers.adopted.map((r) => r.requestId)).toEqual(['db'])
    // The adopted 'db' still holds its request id: a second copy is refused, not started.
    expect(() => sup.spawn('sleep', ['1000'], { requestId: 'db', stdio: 'ignore' })).toThrow(expect.objectContaining({ code: 'ERR_REAPKIT_DUPLICATE_REQUEST' }))
    await sleep(1000)
    expect(starts()).toBe(2) // the dead host's backoff died with it
    // 'gh' again, same policy: its 2 restarts within the window are remembered, so this crash gives it up.
    sup.spawn('sh', ['-c', `echo start >> ${log}; exit 1`], { requestId: 'gh', stdio: 'ignore', restart: 'on-failure', backoff: { initialMs: 100, jitter: 0 }, intensity: { maxRestarts: 2, windowMs: 600_000 } })
    await settled(sup, 'gh', 'given-up')
    await sleep(500)
    expect(starts()).toBe(3)
    expect(sup.get('gh')).toMatchObject({ restarts: 0, status: 'given-up' })
    expect(events).toEqual(['spawn', 'exit', 'give-up'])
    await sup.terminate('db')
    expect(isGone(ready.db)).toBe(true)
  })
})

describe.runIf(posix)('Supervisor health checks', () => {
  it('a check that fails `failures` times in a row stops the child with the bounded close, and the policy restarts it', async () => {
    const { sup, events } = supervise({ closeTimeoutMs: 300 })
    const fails: Array<[number, string]> = []
    sup.on('health-fail', (_r, error, inARow) => fails.push([inARow, (error as Error).message]))
    sup.spawn('sleep', ['1000'], {
      requestId: 'wedged',
      stdio: 'pipe',
      restart: 'on-failure',
      backoff: { initialMs: 50 },
      health: {
        check: ({ record }) => {
          if (record.restarts === 0) throw new Error('no pong')
        },
        intervalMs: 100,
        timeoutMs: 2000,
        failures: 3,
      },
    })
    await waitFor(() => sup.get('wedged')?.restarts === 1 && sup.get('wedged')?.status === 'running', 20_000, 'the restart')
    await sleep(600) // the new incarnation passes its checks
    const r = sup.get('wedged')!
    expect(fails).toEqual([[1, 'no pong'], [2, 'no pong'], [3, 'no pong']])
    expect(r.incarnations.map((i) => i.reason)).toEqual(['start', 'unhealthy'])
    expect(r.incarnations[0]!.signal).toBe('SIGTERM') // phase 1 (stdin end) did not end sleep: phase 2 did
    // The health stop is a stop: its 'terminate' (reason 'unhealthy') before the restart.
    expect(events).toEqual(['spawn', 'exit', 'terminate', 'restart', 'spawn'])
    expect(sup.metrics()).toMatchObject({ healthFailures: 3, restarts: 1, starts: 2, stops: 1, stopsByReason: { unhealthy: 1 } })
  })

  it('a check that hangs is bounded by its timeout (its signal aborted); without a restart policy the child ends terminated', async () => {
    const { sup } = supervise({ closeTimeoutMs: 300 })
    const errors: unknown[] = []
    const signals: AbortSignal[] = []
    sup.on('health-fail', (_r, error) => errors.push(error))
    const t0 = performance.now()
    sup.spawn('sleep', ['1000'], {
      requestId: 'hung',
      stdio: 'ignore',
      health: {
        check: ({ signal }) => {
          signals.push(signal)
          return new Promise(() => {})
        },
        intervalMs: 50,
        timeoutMs: 300,
        failures: 2,
      },
    })
    await settled(sup, 'hung', 'terminated')
    expect(performance.now() - t0).toBeLessThan(10_000)
    expect(errors).toHaveLength(2)
    expect(errors[0]).toMatchObject({ code: 'ETIMEDOUT', timeoutMs: 300 })
    expect(signals.every((s) => s.aborted)).toBe(true)
    expect(sup.get('hung')).toMatchObject({ restarts: 0, signal: 'SIGTERM' })
  })

  it('terminate ends the checks: none runs after it', async () => {
    const { sup } = supervise()
    let calls = 0
    sup.spawn('sleep', ['1000'], { requestId: 'ok', stdio: 'ignore', health: { check: () => void calls++, intervalMs: 30 } })
    await waitFor(() => calls >= 3, 10_000, 'a few checks')
    await sup.terminate('ok')
    const after = calls
    await sleep(500)
    expect(calls).toBe(after)
  })

  it('bad health options are refused before anything starts', () => {
    const { sup } = supervise()
    expect(() => sup.spawn('sleep', ['1'], { health: { check: 'ping' } as never })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
    expect(() => sup.spawn('sleep', ['1'], { health: { check: () => {}, failures: 0 } })).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }))
    expect(() => sup.spawn('sleep', ['1'], { health: { check: () => {}, timeoutMs: -5 } })).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }))
    expect(sup.list()).toEqual([])
  })
})

describe.runIf(posix)('registerSupervisorMetrics: Prometheus text through prom-client', () => {
  it('a scrape parsed by a real Prometheus text parser matches metrics(); unregistering removes it', async () => {
    const req = createRequire(__filename)
    const { Registry } = req('prom-client') as typeof import('prom-client')
    const registry = new Registry()
    const { sup } = supervise()
    const unregister = registerSupervisorMetrics(sup, registry)
    expect(() => registerSupervisorMetrics(sup, registry, { prefix: 'bad prefix' })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
    sup.spawn('sh', ['-c', 'exit 1'], { requestId: 'crash', stdio: 'ignore', restart: 'on-failure', backoff: { initialMs: 20 }, intensity: { maxRestarts: 1 } })
    sup.spawn('sleep', ['1000'], { requestId: 'up', stdio: 'ignore' })
    await settled(sup, 'crash', 'given-up')
    await sup.restart('up')
    await sup.terminate('up')
    const { families, value } = scrape(await registry.metrics(), 'reapkit_supervisor_')
    const m = sup.metrics()
    expect(value('starts_total')).toBe(m.starts)
    expect(m.starts).toBe(4)
    expect(value('restarts_total')).toBe(1)
    expect(value('requested_restarts_total')).toBe(1)
    expect(value('given_up_total')).toBe(1)
    expect(value('stops_total', { reason: 'terminate' })).toBe(1)
    expect(value('escalations_total')).toBe(0)
    expect(value('exits_total', { code: '1' })).toBe(2)
    expect(value('exits_total', { signal: 'SIGTERM' })).toBe(2) // the requested restart's stop, and the terminate
    expect(value('children', { status: 'given-up' })).toBe(1)
    expect(value('children', { status: 'terminated' })).toBe(1)
    expect(value('children', { status: 'running' })).toBe(0)
    const stops = families.get('reapkit_supervisor_stop_duration_seconds')!
    expect(stops.type).toBe('HISTOGRAM')
    expect(Number(stops.metrics[0]!.count)).toBe(1)
    expect(Number(stops.metrics[0]!.buckets!['+Inf'])).toBe(1)
    unregister()
    expect(await registry.metrics()).not.toContain('reapkit_supervisor_')
  })
})

describe('restart policy arithmetic', () => {
  const spec = restartSpec({ restart: 'on-failure', backoff: { initialMs: 100, maxMs: 1000, factor: 3, jitter: 0.5 }, intensity: { maxRestarts: 3, windowMs: 10_000 } })!

  it('backoff grows by the factor up to the cap, and jitter only shortens it, by at most its fraction', () => {
    expect([0, 1, 2, 3, 4].map((n) => backoffMs(spec, n, () => 0))).toEqual([100, 300, 900, 1000, 1000])
    expect(backoffMs(spec, 2, () => 0.999999)).toBe(450)
    for (let i = 0; i < 200; i++) expect(backoffMs(spec, 3, Math.random)).toBeGreaterThanOrEqual(500)
  })

  it('the intensity window counts only restarts within it, and the backoff exponent with it', () => {
    const r = new Restarter(spec)
    const at = (t: number) => r.decide(1, null, false, t, () => 0)
    expect([at(0), at(1000), at(2000)].map((d) => d.action === 'restart' && d.delayMs)).toEqual([100, 300, 900])
    expect(at(3000)).toEqual({ action: 'give-up' })
    // 10 s after the first, it left the window: one more is allowed, at the exponent of the 2 still in it.
    expect(at(10_500)).toEqual({ action: 'restart', delayMs: 900, reason: 'failure' })
    expect(new Restarter(spec).decide(0, null)).toEqual({ action: 'none' })
    expect(new Restarter(spec).decide(0, null, true, 0, () => 0)).toEqual({ action: 'restart', delayMs: 100, reason: 'unhealthy' })
    expect(restartSpec({})).toBeNull()
  })

  // A crash loop under a large maxRestarts: each decision walked (and copied) the whole window, so
  // 60,000 restarts in one window took seconds and grew with their square.
  it('a decision costs what leaves the window, not the window: 60,000 in one, then a window that slides', () => {
    const big = restartSpec({ restart: 'on-failure', backoff: { initialMs: 0 }, intensity: { maxRestarts: 2 ** 31 - 1, windowMs: 60_000 } })!
    const r = new Restarter(big)
    let restarts = 0
    const t0 = performance.now()
    for (let t = 0; t < 60_000; t++) if (r.decide(1, null, false, t, () => 0).action === 'restart') restarts++
    expect(performance.now() - t0).toBeLessThan(3000) // ~10 ms here; the walk of the window took seconds
    expect(restarts).toBe(60_000)
    expect(r.recent(59_999)).toHaveLength(60_000)
    r.decide(1, null, false, 70_000, () => 0) // 0 .. 10,000 left the window
    expect(r.recent(70_000)).toHaveLength(50_000)
    expect(r.recent(70_000)[0]).toBe(10_001)
    // The clock stepped back: what is now in the future is dropped, the order stays.
    expect(r.decide(1, null, false, 50_000, () => 0).action).toBe('restart')
    expect(r.recent(50_000)).toEqual([...Array.from({ length: 40_000 }, (_, i) => 10_001 + i), 50_000])
  })
})
