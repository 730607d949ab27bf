/**
 * What follows an incarnation's end when neither terminate() nor shutdownAll() made it (an exit, a
 * failed start, the supervisor's own stop for failed health checks or readiness): the restart
 * policy (restart.ts) decides, then one of three steps runs: restart later (after the backoff, once
 * the last incarnation's leftovers are stopped), give up, or settle (it is over).
 */
import type { ChildProcess } from 'node:child_process'
import { logEvent } from '../../ground/logger'
import { type KillResult, killProcessGracefully } from '../../mechanisms/kill'
import { spawn, spawnedInfo } from '../../mechanisms/spawn'
import type { Core, End } from './core'
import { watchIncarnation } from './incarnation'
import { type ProcessStatus, startIncarnation } from './record'
import { type Entry, live } from './registry'
import type { RestartDecision, StartReason } from './restart'
import { announceStop, settle, stoppedStatus } from './settle'

type RestartReason = Exclude<StartReason, 'start'>

/** The restart policy's decision on an end, then the step it names. */
export function afterEnd(core: Core, entry: Entry, end: End): void {
  const decision = decide(core, entry, end)
  const stop = end.kind === 'stopped' ? end.stop : undefined
  if (decision.action === 'restart') {
    restartLater(core, entry, decision.delayMs, decision.reason, end)
    if (stop) announceStop(core, entry, stop)
    return
  }
  if (decision.action === 'give-up') return giveUp(core, entry, end)
  settle(core, entry, finalStatus(end), stop)
}

function decide(core: Core, entry: Entry, end: End): RestartDecision {
  const restarter = entry.restart?.restarter
  if (!restarter || !core.restartsAllowed()) return { action: 'none' }
  if (end.kind === 'exit') return restarter.decide(end.code, end.signal)
  if (end.kind === 'start-failed') return restarter.decide(null, null)
  return restarter.decide(end.stop.report.code, end.stop.report.signal, end.stop.reason)
}

/** With no restart: how it ended ('terminated'/'killed' after a stop the supervisor made). */
function finalStatus(end: End): ProcessStatus {
  if (end.kind === 'exit') return 'exited'
  if (end.kind === 'start-failed') return 'start-failed'
  return stoppedStatus(end.stop)
}

/** How the end reads in a log line: the exit code and signal, or the start's error code. */
function endFields(end: End): Record<string, unknown> {
  if (end.kind === 'exit') return { code: end.code, signal: end.signal }
  if (end.kind === 'start-failed') return { code: null, signal: null, error: (end.error as NodeJS.ErrnoException).code ?? end.error.message }
  return { code: end.stop.report.code, signal: end.stop.report.signal, stoppedFor: end.stop.reason }
}

function restartLater(core: Core, entry: Entry, delayMs: number, reason: RestartReason, end: End): void {
  const { record } = entry
  record.status = 'restarting'
  record.nextStartAt = new Date(Date.now() + delayMs)
  logEvent(core.logger, 'info', 'process.restarting', { pid: record.pid, requestId: record.requestId, ...endFields(end), delayMs, reason })
  core.event('status', record)
  core.state?.noteRestarts(record.requestId, entry.restart!.restarter.recent(), entry.restart!.restarter.spec.windowMs)
  // What the last incarnation left in its group is stopped before the next one starts (a child
  // that never ran left nothing).
  const startedAt = performance.now()
  const stop: Promise<KillResult | undefined> = entry.child.pid === undefined
    ? Promise.resolve(undefined)
    : killProcessGracefully(entry.child, { graceMs: core.graceMs, logger: core.logger })
  entry.restart!.leftovers = { stop, startedAt }
  entry.restart!.restarter.schedule(delayMs, stop, () => restartNow(core, entry, delayMs, reason))
}

/** Starts the next incarnation under the same record. */
function restartNow(core: Core, entry: Entry, delayMs: number, reason: RestartReason): void {
  const { record } = entry
  entry.restart!.leftovers = undefined
  let child: ChildProcess
  try {
    child = spawn(record.command, record.args, entry.restart!.options)
  } catch (err) {
    // e.g. out of descriptors: a failure like any other, under the same intensity limit
    restartAttempted(core, entry, null)
    return startFailed(core, entry, err as Error)
  }
  if (child.pid === undefined) {
    restartAttempted(core, entry, child)
    return failsInItsErrorEvent(core, entry, child) // ENOENT, EACCES...
  }
  child.on('error', (err) => logEvent(core.logger, 'warn', 'process.error', { pid: child.pid, error: err.message }))
  const info = spawnedInfo(child)
  core.registry.reindex(entry, child, info?.handle && !info.handle.closed ? info.handle : null)
  startIncarnation(record, child, info?.pgid ?? null, reason, delayMs, entry.ready !== null)
  watchIncarnation(core, entry, core.state !== null)
  core.state?.flush() // now: a crash right after must not hide this incarnation from the next supervisor
  logEvent(core.logger, 'info', 'process.restarted', { pid: record.pid, requestId: record.requestId, restarts: record.restarts })
  core.event('restart', record, child)
  core.event('spawn', record, child)
  core.event('status', record)
}

/**
 * A restart whose spawn failed is a restart all the same: the policy started it again (its intensity
 * window counts it), so `restarts` and the 'restart' event (then 'start-failed', not 'spawn') count
 * it; a crash loop of failed spawns shows in restarts_total as one of exits does. No incarnation:
 * nothing ran. `child`: what Node returned (no pid), or null when the spawn threw.
 */
function restartAttempted(core: Core, entry: Entry, child: ChildProcess | null): void {
  entry.record.restarts++
  core.event('restart', entry.record, child)
}

/**
 * A spawn that failed without throwing: Node emits the reason as the child's 'error', in the next
 * tick. The supervisor listens (so it is never unhandled) and takes it as the start's failure,
 * unless a stop ended the child meanwhile.
 */
export function failsInItsErrorEvent(core: Core, entry: Entry, child: ChildProcess): void {
  child.once('error', (err) => {
    if (live(entry) && entry.stopping === 0) startFailed(core, entry, err)
    else logEvent(core.logger, 'warn', 'process.start-failed', { requestId: entry.record.requestId, command: entry.record.command, error: err.message })
  })
}

/** A start that failed: on the record, an event, then the restart policy, as any failure. */
function startFailed(core: Core, entry: Entry, error: Error): void {
  const { record } = entry
  const code = (error as NodeJS.ErrnoException).code ?? null
  record.error = { code: typeof code === 'string' ? code : null, message: error.message }
  logEvent(core.logger, 'warn', 'process.start-failed', { requestId: record.requestId, command: record.command, code, error: error.message })
  core.event('start-failed', record, error)
  afterEnd(core, entry, { kind: 'start-failed', error })
}

function giveUp(core: Core, entry: Entry, end: End): void {
  const { record } = entry
  logEvent(core.logger, 'warn', 'process.given-up', { pid: record.pid, requestId: record.requestId, restarts: record.restarts, ...endFields(end) })
  settle(core, entry, 'given-up', end.kind === 'stopped' ? end.stop : undefined)
  core.event('give-up', record)
}
