// keepalive.metrics() and registerKeepaliveMetrics, against real work: each work item is a real
// child process (sleep), the abandoned one killed through the abandon signal the drain aborts.
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import { createKeepalive, type Keepalive, registerKeepaliveMetrics, ShuttingDownError } from '../lib/index'
import { exitOf, waitFor } from './helpers'
import { scrape } from './prometheus'
import { childrenAfterEach } from './supervisor-cleanup'

const posix = process.platform !== 'win32'
const req = createRequire(__filename)

// Every child a test starts, killed after it, pass or fail (a no-op once reaped).
const { children, keepalives } = childrenAfterEach()

/** Real work: a `sleep` child, killed if the drain abandons it. */
function sleepFor(seconds: number, signal: AbortSignal): Promise<void> {
  const child = spawn('sleep', [String(seconds)], { stdio: 'ignore' })
  children.add(child)
  const onAbort = (): void => void child.kill('SIGTERM')
  signal.addEventListener('abort', onAbort, { once: true })
  return exitOf(child, 60_000).then(() => signal.removeEventListener('abort', onAbort))
}

function keepalive(graceMs: number): Keepalive {
  const k = createKeepalive({ graceMs, exit: false, signals: false, stdin: false, parentDeath: false, finalLine: false })
  keepalives.add(k)
  return k
}

describe.runIf(posix)('keepalive.metrics()', () => {
  it('matches run(), refusals and the drain one for one, with real work', async () => {
    const k = keepalive(3000)
    const empty = k.metrics()
    expect(empty).toMatchObject({ state: 'running', reason: null, inFlight: 0, served: 0, drained: 0, refused: 0, abandoned: 0, drainMs: null })
    expect(empty.runDurationMs.count).toBe(0)
    expect(empty.runDurationMs.buckets.at(-1)).toEqual({ le: '+Inf', count: 0 })

    await Promise.all([1, 2, 3].map(() => k.run((signal) => sleepFor(0.03, signal))))
    k.begin()(false) // released, not work: neither served nor timed
    expect(k.metrics()).toMatchObject({ state: 'running', inFlight: 0, served: 3, drained: 0, refused: 0 })
    expect(k.metrics().runDurationMs.count).toBe(3)

    const drains = k.run((signal) => sleepFor(0.2, signal))
    const hangs = k.run((signal) => sleepFor(60, signal)).catch(() => {})
    expect(k.metrics().inFlight).toBe(2)
    void k.shutdown('test')
    const draining = k.metrics()
    expect(draining).toMatchObject({ state: 'draining', reason: 'test', inFlight: 2 })
    expect(draining.drainMs).toBeGreaterThanOrEqual(0)
    await expect(k.run(() => 1)).rejects.toBeInstanceOf(ShuttingDownError)
    expect(() => k.begin()).toThrow(ShuttingDownError)
    await drains
    expect(k.metrics()).toMatchObject({ inFlight: 1, served: 4, drained: 1, refused: 2, abandoned: 0 })

    const report = await k.closed
    const closed = k.metrics()
    expect(closed).toMatchObject({ state: 'closed', reason: 'test', served: report.served, drained: report.drained, refused: report.refused, abandoned: report.abandoned })
    expect(closed).toMatchObject({ served: 4, drained: 1, refused: 2, abandoned: 1 })
    expect(closed.drainMs).toBe(report.elapsedMs)
    expect(closed.drainMs).toBeGreaterThanOrEqual(2900) // the grace, given in full to the hung one

    // The abandoned child is killed through its signal; when it ends it stays abandoned: neither
    // served nor timed.
    await hangs
    await waitFor(() => k.metrics().inFlight === 0, 10_000, 'the abandoned work to end')
    const after = k.metrics()
    expect(after).toMatchObject({ served: 4, abandoned: 1, drainMs: report.elapsedMs })
    const h = after.runDurationMs
    expect(h.count).toBe(after.served)
    // Each item was a sleep of at least 30 ms: none fits a bucket of 25 ms or less.
    expect(h.buckets.filter((b) => b.le !== '+Inf' && b.le <= 25).every((b) => b.count === 0)).toBe(true)
    expect(h.sum).toBeGreaterThanOrEqual(3 * 30 + 200)
    expect(h.sum).toBeLessThan(2900) // the abandoned one's ~3 s is not in it
    expect(h.buckets.map((b) => b.count)).toEqual([...h.buckets.map((b) => b.count)].sort((a, b) => a - b)) // cumulative
    expect(h.buckets.at(-1)).toEqual({ le: '+Inf', count: 4 })
  })
})

describe.runIf(posix)('keepalive: work abandoned at the grace', () => {
  it('that ends during the hooks is in the report and metrics() as abandoned only: not served, not timed', async () => {
    const k = keepalive(300)
    let hookEnded = false
    // The hook outlasts the abandoned work: it ends while the hooks still run.
    k.onShutdown(() => new Promise<void>((resolve) => setTimeout(resolve, 1500)).then(() => void (hookEnded = true)))
    let workEnded = false
    // A child that ignores the abandon signal and ends on its own, ~0.6 s after the trigger.
    const late = k.run(() => sleepFor(0.6, new AbortController().signal)).then(() => {
      workEnded = true
      return hookEnded
    })
    const report = await k.shutdown('late')
    expect(await late).toBe(false) // it did end during the hooks
    expect(workEnded).toBe(true)
    expect(report).toMatchObject({ served: 0, drained: 0, abandoned: 1 })
    const m = k.metrics()
    expect(m).toMatchObject({ state: 'closed', inFlight: 0, served: 0, drained: 0, abandoned: 1 })
    expect(m.runDurationMs.count).toBe(0)
    expect(m.runDurationMs.sum).toBe(0)
  })
})

describe.runIf(posix)('registerKeepaliveMetrics: Prometheus text through prom-client', () => {
  it('a scrape parsed by a real Prometheus text parser matches metrics(); unregistering removes it', async () => {
    const { Registry } = req('prom-client') as typeof import('prom-client')
    const registry = new Registry()
    const k = keepalive(300)
    const unregister = registerKeepaliveMetrics(k, registry)
    await Promise.all([0.02, 0.05, 0.3].map((s) => k.run((signal) => sleepFor(s, signal))))
    const hangs = k.run((signal) => sleepFor(60, signal)).catch(() => {})
    await k.shutdown('scrape')
    await k.run(() => 1).catch(() => {})
    await hangs
    await waitFor(() => k.metrics().inFlight === 0, 10_000, 'the abandoned work to end')

    const { families, value } = scrape(await registry.metrics(), 'reapkit_keepalive_')
    const m = k.metrics()
    expect(m).toMatchObject({ served: 3, drained: 0, refused: 1, abandoned: 1, inFlight: 0, state: 'closed' })
    expect(value('served_total')).toBe(m.served)
    expect(value('drained_total')).toBe(m.drained)
    expect(value('refused_total')).toBe(m.refused)
    expect(value('abandoned_total')).toBe(m.abandoned)
    expect(value('in_flight')).toBe(0)
    expect(value('state', { state: 'closed' })).toBe(1)
    expect(value('state', { state: 'running' })).toBe(0)
    expect(value('drain_seconds')).toBeCloseTo(m.drainMs! / 1000, 6)
    const runs = families.get('reapkit_keepalive_run_duration_seconds')!
    expect(runs.type).toBe('HISTOGRAM')
    expect(Number(runs.metrics[0]!.count)).toBe(m.runDurationMs.count)
    expect(Number(runs.metrics[0]!.sum)).toBeCloseTo(m.runDurationMs.sum / 1000, 3)
    for (const { le, count } of m.runDurationMs.buckets) {
      expect(Number(runs.metrics[0]!.buckets![le === '+Inf' ? le : String(le / 1000)]), `le ${le}`).toBe(count)
    }
    unregister()
    expect(await registry.metrics()).not.toContain('reapkit_keepalive_')
  })

  it('bad arguments are refused before anything is registered; a taken name leaves nothing of ours', async () => {
    const { Registry, Gauge } = req('prom-client') as typeof import('prom-client')
    const registry = new Registry()
    const k = keepalive(100)
    expect(() => registerKeepaliveMetrics({} as Keepalive, registry)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
    expect(() => registerKeepaliveMetrics(k, {} as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
    expect(() => registerKeepaliveMetrics(k, registry, { prefix: 'bad prefix' })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
    new Gauge({ name: 'reapkit_keepalive_drain_seconds', help: 'taken', registers: [registry] })
    expect(() => registerKeepaliveMetrics(k, registry)).toThrow(/already been registered/)
    expect((await registry.getMetricsAsJSON()).map((m) => m.name)).toEqual(['reapkit_keepalive_drain_seconds'])
  })
})

describe('the drain phases keep their timeline', () => {
  it("shutdown() with nothing in flight is 'closing' before it returns, and 'closed' at `closed`", async () => {
    const k = keepalive(1000)
    const done = k.shutdown('now')
    expect(k.state).toBe('closing')
    expect(k.metrics()).toMatchObject({ state: 'closing', reason: 'now', inFlight: 0 })
    const report = await done
    expect(k.state).toBe('closed')
    expect(await k.closed).toBe(report)
  })
})
