// The Supervisor's restart policies at their edges: copies that share nothing with the supervisor's
// own records, options that cannot go with a restart policy, the restart times a state file
// carries (expired, future, claimed once), killAllSync during a backoff, a metric name already
// taken, and a health check that ignores its signal. Real processes; every incarnation is tracked
// for the after-test cleanup, and each test shuts its supervisor down.
import { createRequire } from 'node:module'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { type ProcessRecord, registerSupervisorMetrics, Supervisor } from '../lib/index'
import { Restarter, restartSpec } from '../lib/policies/supervisor/restart'
import { isGone, trackGroup, waitFor } from './helpers'
import { cleanupAfterEach, settled } from './supervisor-cleanup'

const posix = process.platform !== 'win32'
const linux = process.platform === 'linux'
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const { supervise, tempDir: scratch } = cleanupAfterEach()
const tempDir = (): string => scratch('reapkit-restart-edges-')

const crashLoop = { stdio: 'ignore', restart: 'on-failure', backoff: { initialMs: 20, jitter: 0 } } as const

describe.runIf(posix)('Supervisor records and options at the edges', () => {
  it("shutdownAll's close callback and every event get copies: mutating them (arrays, dates) changes nothing of the supervisor's", async () => {
    const { sup } = supervise()
    sup.on('spawn', (r) => {
      r.startedAt.setTime(0)
      r.incarnations[0]!.startedAt.setTime(0)
    })
    sup.spawn('sleep', ['1000'], { requestId: 'k', stdio: 'pipe' })
    const uncaught: unknown[] = []
    const onUncaught = (err: unknown) => uncaught.push(err)
    process.on('uncaughtException', onUncaught)
    try {
      const reports = await sup.shutdownAll({
        close: (child, record) => {
          record.incarnations.length = 0
          record.args.length = 0
          record.startedAt.setTime(0)
          child.stdin!.end()
          child.kill('SIGTERM')
        },
      })
      await sleep(200) // an error thrown in an exit handler would surface on a later tick
      expect(uncaught).toEqual([])
      expect(reports).toHaveLength(1)
    } finally {
      process.off('uncaughtException', onUncaught)
    }
    const r = sup.get('k')!
    expect(r.incarnations).toHaveLength(1)
    expect(r.incarnations[0]!.exitedAt).toBeInstanceOf(Date)
    expect(r.args).toEqual(['1000'])
    expect(r.startedAt.getTime()).toBeGreaterThan(0)
    expect(r.incarnations[0]!.startedAt.getTime()).toBeGreaterThan(0)
    const copy = sup.get('k')!
    copy.exitedAt!.setTime(0)
    expect(sup.get('k')!.exitedAt!.getTime()).toBeGreaterThan(0)
  })

  it('a restart policy with a `signal` or `timeout` spawn option is refused before anything starts', () => {
    const { sup, events } = supervise()
    for (const extra of [{ signal: new AbortController().signal }, { timeout: 1000 }]) {
      expect(() => sup.spawn('sleep', ['1000'], { ...crashLoop, ...extra })).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_COMBINATION' }))
    }
    expect(events).toEqual([])
    expect(sup.list()).toEqual([])
  })

  it('killAllSync during a backoff settles the child (killed), starts nothing after, and frees its request id', async () => {
    const { sup, events } = supervise()
    sup.spawn('sh', ['-c', 'exit 1'], { ...crashLoop, requestId: 'k', backoff: { initialMs: 1500, jitter: 0 } })
    await settled(sup, 'k', 'restarting')
    sup.killAllSync()
    expect(sup.get('k')).toMatchObject({ status: 'killed', nextStartAt: null })
    await sleep(2500) // past the backoff it would have waited
    expect(events).toEqual(['spawn', 'exit'])
    expect(sup.metrics().children.restarting).toBe(0)
    sup.spawn('sleep', ['1000'], { requestId: 'k', stdio: 'ignore' })
    expect(sup.get('k')!.status).toBe('running')
  })

  it('terminate during a backoff reports the stop of the leftovers already under way: its SIGKILL is an escalation', async () => {
    const { sup, events } = supervise({ graceMs: 2000 })
    const stubborn = `sh -c 'trap "" TERM; exec sleep 1000' & sleep 0.3; exit 1`
    sup.spawn('sh', ['-c', stubborn], { ...crashLoop, requestId: 'g', backoff: { initialMs: 10_000, jitter: 0 } })
    await settled(sup, 'g', 'restarting')
    await sleep(800) // into the grace of the leftovers' stop
    const terminating = sup.terminate('g')
    expect(sup.get('g')).toMatchObject({ status: 'restarting', nextStartAt: null }) // no start is due
    const result = await terminating
    expect(result.escalated).toBe(true)
    expect(result.signalsSent.map((s) => s.signal)).toContain('SIGKILL')
    expect(result.survivors).toEqual([])
    expect(sup.get('g')).toMatchObject({ status: 'killed', restarts: 0 })
    expect(events).toEqual(['spawn', 'exit', 'terminate', 'escalate'])
  })

  it('a running child killed by killAllSync is not restarted by its policy', async () => {
    const { sup, events } = supervise()
    sup.spawn('sleep', ['1000'], { ...crashLoop, requestId: 'r' })
    sup.killAllSync()
    await settled(sup, 'r', 'exited')
    await sleep(500)
    expect(events).toEqual(['spawn', 'exit'])
    expect(sup.get('r')).toMatchObject({ signal: 'SIGKILL', restarts: 0 })
  })

  it('a spawn() of a request id given up starts a window of its own, with or without a stateFile', async () => {
    const withFile = linux ? [{ stateFile: join(tempDir(), 'supervisor.json') }] : []
    for (const options of [{}, ...withFile]) {
      const { sup } = supervise(options)
      await sup.leftovers
      const spawnOnce = () => sup.spawn('sh', ['-c', 'exit 1'], { ...crashLoop, requestId: 'a', intensity: { maxRestarts: 2 } })
      spawnOnce()
      await settled(sup, 'a', 'given-up')
      spawnOnce()
      await settled(sup, 'a', 'given-up')
      expect(sup.get('a')!.restarts, JSON.stringify(options)).toBe(2)
    }
  })
})

describe.runIf(linux)('restart times in the state file', () => {
  const readTimes = (file: string) => (JSON.parse(readFileSync(file, 'utf8')) as { restarts: Array<{ requestId: string; at: number[]; windowMs?: number }> }).restarts

  it('are forgotten once out of their window: nothing grows from one supervisor to the next', async () => {
    const file = join(tempDir(), 'supervisor.json')
    for (let generation = 0; generation < 3; generation++) {
      const { sup } = supervise({ stateFile: file })
      await sup.leftovers
      sup.spawn('sh', ['-c', 'exit 1'], { ...crashLoop, requestId: `job-${generation}`, intensity: { maxRestarts: 1, windowMs: 300 } })
      await settled(sup, `job-${generation}`, 'given-up')
      expect(readTimes(file).map((t) => t.requestId)).toEqual([`job-${generation}`])
      expect(readTimes(file)[0]!.windowMs).toBe(300)
      await sleep(600) // the window is over
      await sup.shutdownAll()
      sup.dispose()
      expect(readTimes(file)).toEqual([])
    }
  })

  it('in the future (a clock stepped back) are dropped when read; a long list is kept to the newest', async () => {
    const file = join(tempDir(), 'supervisor.json')
    const ahead = Date.now() + 3_600_000
    const restarts = [{ requestId: 'a', at: Array(5).fill(ahead), windowMs: 60_000 }, { requestId: 'b', at: Array(1500).fill(Date.now() - 1000), windowMs: 600_000 }]
    writeFileSync(file, `${JSON.stringify({ version: 1, owner: null, processes: [], restarts })}\n`, { mode: 0o600 })
    const { sup } = supervise({ stateFile: file })
    await sup.leftovers
    sup.spawn('sh', ['-c', 'exit 1'], { ...crashLoop, requestId: 'a', intensity: { maxRestarts: 5, windowMs: 60_000 } })
    await waitFor(() => (sup.get('a')?.restarts ?? 0) >= 1, 20_000, 'a restart of a')
    await waitFor(() => readTimes(file).some((t) => t.requestId === 'a'), 5000, "a's restarts in the file")
    const b = readTimes(file).find((t) => t.requestId === 'b')!
    expect(b.at.length).toBeLessThanOrEqual(1000)
  })

  it('a Restarter seeded with more times than its limit keeps only the newest maxRestarts', () => {
    const spec = restartSpec({ restart: 'always', intensity: { maxRestarts: 3, windowMs: 10_000 } })!
    const r = new Restarter(spec, [1, 2, 3, 4, 5, 6])
    expect(r.recent(7)).toEqual([4, 5, 6])
    expect(new Restarter(spec, [100]).recent(50)).toEqual([]) // a time in the future
  })
})

describe.runIf(posix)('registerSupervisorMetrics and health checks at the edges', () => {
  it('a metric name already taken: the call throws and leaves none of its own registered', () => {
    const req = createRequire(__filename)
    const { Counter, Registry } = req('prom-client') as typeof import('prom-client')
    const registry = new Registry()
    new Counter({ name: 'reapkit_supervisor_restarts_total', help: 'mine', registers: [registry] })
    const { sup } = supervise()
    const listeners = sup.listenerCount('terminate')
    expect(() => registerSupervisorMetrics(sup, registry)).toThrow(/already been registered/)
    expect(registry.getMetricsAsArray().map((m) => m.name)).toEqual(['reapkit_supervisor_restarts_total'])
    expect(sup.listenerCount('terminate')).toBe(listeners)
  })

  it('a check that ignores its signal is never run beside itself: the ticks while it hangs count as failures', async () => {
    const { sup } = supervise()
    let pending = 0
    let most = 0
    const fails: number[] = []
    sup.on('health-fail', (_r, _e, inARow) => fails.push(inARow))
    sup.spawn('sleep', ['1000'], {
      requestId: 'h',
      stdio: 'ignore',
      health: {
        intervalMs: 20,
        timeoutMs: 50,
        failures: 4,
        check: async () => {
          pending++
          most = Math.max(most, pending)
          await sleep(1500) // ignores its signal
          pending--
        },
      },
    })
    await settled(sup, 'h', 'terminated')
    expect(most).toBe(1)
    expect(fails).toEqual([1, 2, 3, 4])
  })
})

describe.runIf(posix)('shutdownAll of a child waiting out a restart backoff', () => {
  it("emits one 'terminate' event with its record and the stop's report, as terminate() does, and starts nothing", async () => {
    const dir = tempDir()
    const leftoverFile = join(dir, 'leftover.pid')
    const { sup, events } = supervise()
    const stops: Array<{ record: ProcessRecord; report: { requestId?: unknown; capped?: boolean; signalsSent: unknown[]; survivors: number[] } }> = []
    sup.on('terminate', (record, report) => stops.push({ record, report: report as never }))
    // Crashes at once, leaving a member of its group behind (stopped before any next incarnation),
    // then waits out a long backoff.
    sup.spawn('sh', ['-c', `sleep 1000 & echo $! > ${leftoverFile}; exit 1`], { stdio: 'ignore', requestId: 'backoff', restart: 'on-failure', backoff: { initialMs: 60_000, jitter: 0 } })
    await settled(sup, 'backoff', 'restarting')
    await waitFor(() => readFileSync(leftoverFile, 'utf8').trim() !== '', 10_000, 'the leftover pid')
    const leftover = Number(readFileSync(leftoverFile, 'utf8'))
    trackGroup(leftover)
    const stopsBefore = sup.metrics().stops
    const shutdown = sup.shutdownAll()
    // The wait is cancelled: no start is due, and the status changes when the stop ends.
    expect(sup.get('backoff')).toMatchObject({ status: 'restarting', nextStartAt: null })
    const reports = await shutdown
    expect(sup.get('backoff')).toMatchObject({ status: 'terminated', restarts: 0, nextStartAt: null })
    expect(stops).toHaveLength(1)
    expect(stops[0]!.record).toMatchObject({ requestId: 'backoff', status: 'terminated' })
    expect(stops[0]!.report).toMatchObject({ requestId: 'backoff', capped: false, survivors: [] })
    // The stop of the old incarnation's leftovers, under way at the shutdown, is part of the report.
    expect(stops[0]!.report.signalsSent.length).toBeGreaterThanOrEqual(1)
    expect(reports).toContainEqual(stops[0]!.report)
    expect(sup.metrics().stops).toBe(stopsBefore + 1)
    await waitFor(() => isGone(leftover), 10_000, 'the leftover to be gone')
    await sleep(300)
    expect(events.filter((e) => e === 'spawn')).toHaveLength(1)
  })

  it('two concurrent shutdownAll() share its one stop: one report, one settle, one event', async () => {
    const { sup, events } = supervise({ graceMs: 1000 })
    // Its leftover ignores SIGTERM, so the stop lasts the grace and ends in SIGKILL.
    const stubborn = `sh -c 'trap "" TERM; exec sleep 1000' & sleep 0.3; exit 1`
    sup.spawn('sh', ['-c', stubborn], { stdio: 'ignore', requestId: 'twice', restart: 'on-failure', backoff: { initialMs: 60_000, jitter: 0 } })
    await settled(sup, 'twice', 'restarting')
    const stopsBefore = sup.metrics().stops
    const first = sup.shutdownAll()
    const second = sup.shutdownAll()
    await sleep(200) // both under way
    expect(sup.get('twice')).toMatchObject({ status: 'restarting', nextStartAt: null })
    const [a, b] = await Promise.all([first, second])
    expect(a).toHaveLength(1)
    expect(b).toHaveLength(1)
    expect(b[0]).toBe(a[0]) // one stop, not two
    expect(a[0]).toMatchObject({ requestId: 'twice', escalated: true, survivors: [] })
    expect(sup.get('twice')).toMatchObject({ status: 'killed', nextStartAt: null })
    expect(sup.metrics().stops).toBe(stopsBefore + 1)
    expect(events).toEqual(['spawn', 'exit', 'terminate', 'escalate'])
  })
})
