// Issue 31 item 1, "every stop visible and told one way", with real processes: a health stop is a
// stop (events, counters, histogram, reason 'unhealthy'); after shutdownAll the status is the
// supervisor's whatever the child did in its grace; a report has one time origin; a start that
// fails is an event and a record state, never an unhandled 'error'; the restart log line says how
// the child ended. Every child is tracked for the after-test cleanup; every wait is bounded.
import { spawn } from 'node:child_process'
import { chmodSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { ProcessRecord, StopReason, StopReport } from '../lib/index'
import { waitFor } from './helpers'
import { cleanupAfterEach, settled } from './supervisor-cleanup'

const posix = process.platform !== 'win32'
const { supervise, tempDir } = cleanupAfterEach()

/** Every 'terminate' and 'escalate' with its reason, in order. */
function stopsOf(sup: ReturnType<typeof supervise>['sup']) {
  const stops: Array<[string, StopReason, StopReport]> = []
  sup.on('terminate', (_r, report, reason) => stops.push(['terminate', reason, report]))
  sup.on('escalate', (_r, report, reason) => stops.push(['escalate', reason, report]))
  return stops
}

describe.runIf(posix)('Supervisor: every stop visible and told one way', () => {
  it('a health stop that needed SIGKILL is a stop: terminate + escalate (reason unhealthy), counted, timed, status killed', async () => {
    const { sup } = supervise({ closeTimeoutMs: 250, graceMs: 300 })
    const stops = stopsOf(sup)
    // Ignores SIGTERM (an ignored signal stays ignored across exec) and stdin's end.
    sup.spawn('sh', ['-c', "trap '' TERM; exec sleep 1000"], {
      requestId: 'wedged',
      stdio: 'pipe',
      health: { check: () => Promise.reject(new Error('no pong')), intervalMs: 50, failures: 1 },
    })
    await settled(sup, 'wedged', 'killed')
    expect(stops.map(([name, reason]) => [name, reason])).toEqual([['terminate', 'unhealthy'], ['escalate', 'unhealthy']])
    expect(stops[0]![2].signalsSent.map((s) => s.signal)).toEqual(['SIGTERM', 'SIGKILL'])
    const m = sup.metrics()
    expect(m).toMatchObject({ stops: 1, escalations: 1, healthFailures: 1, stopsByReason: { unhealthy: 1, terminate: 0, shutdown: 0 } })
    expect(m.stopDurationMs.count).toBe(1)
    expect(m.stopDurationMs.sum).toBeGreaterThanOrEqual(300) // its grace, at least
    expect(m.children.killed).toBe(1)
  })

  it('after a clean shutdownAll a child that left on its stdin end is terminated (the stop was the supervisor\'s), with its event', async () => {
    const { sup } = supervise()
    const stops = stopsOf(sup)
    sup.spawn('cat', [], { requestId: 'polite', stdio: 'pipe' }) // leaves when its stdin ends: phase 1 of the close
    const [report] = await sup.shutdownAll()
    expect(report!.phase).toBe('graceful')
    expect(sup.get('polite')!.status).toBe('terminated')
    expect(stops.map(([name, reason]) => [name, reason])).toEqual([['terminate', 'shutdown']])
    expect(sup.metrics().children).toMatchObject({ terminated: 1, exited: 0 })
    expect(sup.metrics().stopsByReason.shutdown).toBe(1)
  })

  it('a shutdownAll that cancels a backoff reports one time origin: no signal after the report\'s end, the earlier stop\'s before its start', async () => {
    const { sup } = supervise({ graceMs: 1500, closeTimeoutMs: 250 })
    // The child leaves a grandchild in its group that ignores SIGTERM, then fails: the stop of its
    // leftovers (SIGTERM, then SIGKILL after the grace) is under way when shutdownAll() comes.
    sup.spawn('sh', ['-c', "(trap '' TERM; exec sleep 1000) & sleep 0.2; exit 1"], {
      requestId: 'leaky',
      stdio: 'ignore',
      restart: 'on-failure',
      backoff: { initialMs: 20_000 },
    })
    await settled(sup, 'leaky', 'restarting')
    await new Promise((r) => setTimeout(r, 300))
    const [report] = await sup.shutdownAll()
    expect(report!.escalated).toBe(true)
    const sent = report!.signalsSent
    expect(sent.length).toBeGreaterThanOrEqual(2)
    for (const s of sent) expect(s.atMs, JSON.stringify(sent)).toBeLessThanOrEqual(report!.durationMs)
    expect(sent[0]!.signal).toBe('SIGTERM')
    expect(sent[0]!.atMs).toBeLessThan(0) // the leftovers' stop began before this one
    expect(sup.get('leaky')!.status).toBe('killed')
  })

  it('a kill at the shutdown cap is an escalation (forced, SIGKILL in the report, escalate event, counted); a stop not begun at the cap begins then', async () => {
    // Phase 1 (2 s) outlasts the cap (0.5 s): the cap, not the close, ends them all.
    const { sup } = supervise({ closeTimeoutMs: 2000, graceMs: 3000, shutdownTimeoutMs: 500 })
    const stops = stopsOf(sup)
    const stubborn = ['-c', "trap '' TERM; exec sleep 1000"]
    await sup.start('sh', stubborn, { requestId: 'dep' })
    await sup.start('sh', stubborn, { requestId: 'top', after: ['dep'] })
    await sup.start('sh', stubborn, { requestId: 'solo' })
    const closed: Array<string | number | null> = []
    const reports = await sup.shutdownAll({ close: (_child, record) => void closed.push(record.requestId) })
    expect(reports.map((r) => r.requestId)).toEqual(['dep', 'top', 'solo'])
    for (const r of reports) {
      expect(r, String(r.requestId)).toMatchObject({ capped: true, escalated: true, phase: 'forced' })
      const kill = r.signalsSent.find((s) => s.signal === 'SIGKILL')
      expect(kill, String(r.requestId)).toBeDefined()
      // One time origin, this stop's own start: the kill is within it, never past its end.
      expect(kill!.atMs).toBeGreaterThanOrEqual(0)
      expect(kill!.atMs).toBeLessThanOrEqual(r.durationMs)
      expect(sup.get(r.requestId!)!.status).toBe('killed')
    }
    // dep waited for top's stop; at the cap it was killed at once, its close (phase 1) never begun.
    expect(closed.sort()).toEqual(['solo', 'top'])
    expect(reports[0]!.closeCompleted).toBe(false)
    expect(stops.filter(([name]) => name === 'escalate').map(([, reason]) => reason)).toEqual(['shutdown', 'shutdown', 'shutdown'])
    expect(sup.metrics()).toMatchObject({ escalations: 3, stops: 3, children: { killed: 3 } })
  })

  it('a start that fails (ENOENT) is an event and a record state under the restart policy, given up when it says so; never an unhandled error', async () => {
    const { sup } = supervise()
    const failed: Array<[ProcessRecord, Error]> = []
    const giveUps: ProcessRecord[] = []
    const restarts: Array<[number, number | undefined]> = []
    sup.on('start-failed', (r, e) => failed.push([r, e]))
    sup.on('give-up', (r) => giveUps.push(r))
    sup.on('restart', (r, child) => restarts.push([r.restarts, child?.pid]))
    // No 'error' listener on the child: before, Node's 'error' crashed the host.
    sup.spawn('/nonexistent/reapkit-no-such-program', [], { requestId: 'missing', restart: 'always', backoff: { initialMs: 20 }, intensity: { maxRestarts: 2 } })
    expect(sup.get('missing')).toMatchObject({ status: 'starting', restarts: 0 })
    await settled(sup, 'missing', 'given-up')
    const r = sup.get('missing')!
    expect(failed).toHaveLength(3) // the start and the 2 restarts the intensity allowed
    expect(failed.map(([, e]) => (e as NodeJS.ErrnoException).code)).toEqual(['ENOENT', 'ENOENT', 'ENOENT'])
    expect(r.error).toMatchObject({ code: 'ENOENT' })
    expect(Number.isNaN(r.pid)).toBe(true)
    expect(JSON.parse(JSON.stringify(r)).pid).toBe(null)
    expect(r.incarnations).toEqual([])
    expect(giveUps).toHaveLength(1)
    // Each retry is a restart (as the intensity limit counted it), though its spawn failed: no incarnation.
    expect(restarts).toEqual([[1, undefined], [2, undefined]])
    expect(r.restarts).toBe(2)
    expect(giveUps[0]!.restarts).toBe(2)
    expect(sup.metrics()).toMatchObject({ startFailures: 3, givenUp: 1, starts: 0, restarts: 2 })
    expect(sup.metrics().children['given-up']).toBe(1)
  })

  it('a start that fails (EACCES) with no restart policy settles start-failed; terminate() during a failed start\'s backoff ends it', async () => {
    const dir = tempDir('reapkit-start-')
    const script = join(dir, 'not-executable')
    writeFileSync(script, '#!/bin/sh\nexit 0\n')
    chmodSync(script, 0o644)
    const { sup } = supervise()
    sup.spawn(script, [], { requestId: 'denied' })
    await settled(sup, 'denied', 'start-failed')
    expect(sup.get('denied')!.error).toMatchObject({ code: 'EACCES' })
    sup.spawn(script, [], { requestId: 'retried', restart: 'on-failure', backoff: { initialMs: 20_000 } })
    await settled(sup, 'retried', 'restarting')
    const result = await sup.terminate('retried')
    expect(result).toMatchObject({ signalsSent: [], escalated: false })
    expect(sup.get('retried')!.status).toBe('terminated')
    expect(await sup.shutdownAll()).toEqual([])
  })

  it('a failed start without a request id is found and stopped by the ChildProcess spawn() returned (it has no pid); any incarnation\'s child names its record', async () => {
    const { sup } = supervise()
    const failed = sup.spawn('/nonexistent/reapkit-no-such-program', [], { restart: 'always', backoff: { initialMs: 20_000 } })
    expect(failed.pid).toBe(undefined)
    expect(sup.get(failed)).toMatchObject({ status: 'starting', requestId: null })
    await waitFor(() => sup.get(failed)?.status === 'restarting', 10_000, 'the failed start to wait out its backoff')
    await expect(sup.terminate(failed)).resolves.toMatchObject({ signalsSent: [], escalated: false })
    expect(sup.get(failed)!.status).toBe('terminated')
    // A restarted child: the first incarnation's ChildProcess still names the record.
    const marker = join(tempDir('reapkit-first-'), 'ran')
    const once = `test -e ${marker} || { touch ${marker}; exit 1; }; exec sleep 1000` // fails once, then runs
    const first = sup.spawn('sh', ['-c', once], { stdio: 'ignore', restart: 'on-failure', backoff: { initialMs: 10 } })
    await waitFor(() => sup.get(first)?.restarts === 1 && sup.get(first)?.status === 'running', 10_000, 'a restart')
    expect(sup.get(first)!.pid).not.toBe(first.pid)
    await sup.terminate(first)
    expect(sup.get(first)!.status).toBe('terminated')
    // One it did not start is refused, by name, never signalled; anything else is a TypeError.
    const stranger = spawn('true', [], { stdio: 'ignore' })
    await new Promise((res) => stranger.once('exit', res))
    expect(sup.get(stranger)).toBe(undefined)
    await expect(sup.terminate(stranger)).rejects.toMatchObject({ code: 'ERR_REAPKIT_NOT_SUPERVISED', message: expect.stringContaining(`of pid ${stranger.pid}`) })
    await expect(sup.terminate({} as never)).rejects.toThrow(TypeError)
  })

  it('the restart log line carries the exit code and signal', async () => {
    const lines: Array<Record<string, unknown>> = []
    const record = (fields: object) => lines.push(fields as Record<string, unknown>)
    const { sup } = supervise({ logger: { debug: record, info: record, warn: record, error: record } })
    sup.spawn('sh', ['-c', 'exit 3'], { requestId: 'three', stdio: 'ignore', restart: 'on-failure', backoff: { initialMs: 20_000 } })
    await settled(sup, 'three', 'restarting')
    await waitFor(() => lines.some((l) => l.event === 'process.restarting'), 5000, 'the restart log line')
    expect(lines.find((l) => l.event === 'process.restarting')).toMatchObject({ requestId: 'three', code: 3, signal: null, reason: 'failure' })
  })
})
