/**
 * shutdownAll's stop of many entries at once: each through the two-phase close (closeClient), in
 * parallel but each after the children started after it (spawn's `after`), all under one cap.
 * Whatever is left at the cap is SIGKILLed from one listing of the process table shared by every
 * entry, a stop not begun yet (waiting for its dependents') included; each report says so.
 */
import type { ChildProcess } from 'node:child_process'
import type { KillResult } from '../../mechanisms/kill'
import { type CloseReport, closeClientWith } from '../close'
import { SharedDeadlines } from '../../mechanisms/stop/deadlines'
import { containersAtCap } from '../../mechanisms/container/child'
import { type Logger, logEvent } from '../../ground/logger'
import { scanGroups } from '../../mechanisms/group'
import { killEntrySync } from './backstop'
import { dependentsOf } from './order'
import { type Entry, exited, running } from './registry'
import { type ProcessRecord, type ProcessStatus, type ShutdownReport, copyRecord } from './record'
import { reachOf } from '../../mechanisms/stop/reach'

export interface ShutdownContext {
  closeTimeoutMs: number
  graceMs: number
  capMs: number
  logger: Logger
  close: ((child: ChildProcess, record: ProcessRecord) => unknown) | undefined
  /** The supervisor's status change (running -> final), with the stop that made it. */
  settle(entry: Entry, status: ProcessStatus, report: ShutdownReport): void
  settleIfExited(entry: Entry): void
  /**
   * The stops of children waiting out a backoff, while under way. Such a child stays 'restarting'
   * until its stop ends, so a concurrent shutdownAll() targets it too: it shares this stop instead
   * of signalling, settling and reporting it a second time.
   */
  backoffStops: Map<Entry, Promise<ShutdownReport>>
}

/** When the cap fires for everyone at once, one listing of the process table serves them all. */
class CapTable {
  #table: Map<number, number[]> | null | undefined
  error: Error | undefined

  get(): Map<number, number[]> | null {
    if (this.#table !== undefined) return this.#table
    try {
      return (this.#table = scanGroups())
    } catch (err) {
      this.error = err as Error
      return (this.#table = null)
    }
  }
}

/** The one cap of a shutdown: `fired` is set (synchronously) before `promise` resolves. */
interface Cap {
  fired: boolean
  promise: Promise<'cap'>
  table: CapTable
  /** The deadlines of every close of this shutdown, kept by one timer (deadlines.ts). */
  deadlines: SharedDeadlines
}

/**
 * How late a close's deadline may end so that it ends together with the others of the shutdown:
 * per child, about what the event loop takes to begin one close (tens of µs: the closes begun in one
 * loop turn reach their deadlines that far apart), doubled for a busy machine; at most 250 ms. Well
 * inside the cap's 1 ms per process (SHUTDOWN_SLACK_PER_PROCESS_MS).
 */
export function deadlineSlackMs(closes: number): number {
  return Math.min(250, Math.max(10, closes * DEADLINE_SLACK_PER_CLOSE_MS))
}
const DEADLINE_SLACK_PER_CLOSE_MS = 0.05

/** After the cap's SIGKILL, how long a stop waits for its close (or its exit) to tell how it ended. */
const AFTER_CAP_MS = 1000

/** Closes every target in parallel under one cap; one report each, in the targets' order. */
export async function closeUnderCap(targets: Entry[], ctx: ShutdownContext): Promise<ShutdownReport[]> {
  let capTimer: NodeJS.Timeout | undefined
  const cap: Cap = { fired: false, promise: Promise.resolve('cap'), table: new CapTable(), deadlines: new SharedDeadlines(deadlineSlackMs(targets.length)) }
  cap.promise = new Promise<'cap'>((res) => (capTimer = setTimeout(() => ((cap.fired = true), res('cap')), ctx.capMs)))
  try {
    // Reverse start order: each one after its dependents among the targets, in parallel otherwise
    // (and begun in the targets' order). There is no cycle: a dependent is newer than what it names.
    // At the cap every stop not begun yet begins at once (with the SIGKILL): a layer waiting for its
    // dependents' stops is not left running until theirs return.
    const stops = new Map<Entry, Promise<ShutdownReport>>()
    const dependentsOfEach = dependentsOf(targets)
    const stopOf = (entry: Entry): Promise<ShutdownReport> => {
      const known = stops.get(entry)
      if (known) return known
      const dependents = dependentsOfEach.get(entry)!.map((t) => stopOf(t).catch(() => {}))
      const stop = (): Promise<ShutdownReport> => ctx.backoffStops.get(entry) ?? closeOnce(entry, cap, ctx)
      const made = dependents.length === 0 ? stop() : Promise.race([Promise.all(dependents), cap.promise]).then(stop)
      stops.set(entry, made)
      return made
    }
    return await Promise.all(targets.map(stopOf))
  } finally {
    clearTimeout(capTimer)
  }
}

/** closeOne, registered as the one stop of a child waiting out a backoff while it runs. */
function closeOnce(entry: Entry, cap: Cap, ctx: ShutdownContext): Promise<ShutdownReport> {
  const waiting = entry.record.status === 'restarting'
  const stop = closeOne(entry, cap, ctx)
  if (!waiting) return stop
  ctx.backoffStops.set(entry, stop)
  const forget = (): void => void ctx.backoffStops.delete(entry)
  stop.then(forget, forget)
  return stop
}

/**
 * One child's stop: the two-phase close, raced with the cap. Its report's times (each signal's
 * atMs, durationMs) count from this stop's own start, as terminate()'s do, whether the close or the
 * cap ended it.
 */
async function closeOne(entry: Entry, cap: Cap, ctx: ShutdownContext): Promise<ShutdownReport> {
  if (entry.child.pid === undefined) return closeNeverRan(entry, ctx)
  const ownStart = performance.now()
  const wasRunning = running(entry)
  // A child waiting out a backoff (its restart cancelled): this stop ends it, as terminate() would.
  const wasWaiting = entry.record.status === 'restarting'
  const joinUnderWay = joinStopUnderWay(entry)
  entry.stopping++
  const close = ctx.close
  // Begun only once the cap had fired (it waited for its dependents): no graceful close is left.
  const closing = cap.fired ? null : closeClientWith(entry.child, {
    closeTimeoutMs: ctx.closeTimeoutMs,
    graceMs: ctx.graceMs,
    logger: ctx.logger,
    ...(close ? { close: () => close(entry.child, copyRecord(entry.record)) } : {}),
  }, cap.deadlines).then(joinUnderWay)
  try {
    const first = closing ? await Promise.race([closing, cap.promise]) : 'cap'
    if (first !== 'cap') {
      const report = { ...first, requestId: entry.record.requestId, capped: false }
      // Its stop, whatever the child did in its grace (left on stdin end, say): the supervisor's status.
      if (wasRunning && exited(entry)) ctx.settle(entry, first.phase === 'already-exited' ? 'exited' : first.escalated ? 'killed' : 'terminated', report)
      if (wasWaiting) ctx.settle(entry, first.escalated ? 'killed' : 'terminated', report)
      return report
    }
    const table = cap.table.get()
    const killed = killEntrySync(entry, table)
    const killedAtMs = performance.now() - ownStart
    logEvent(ctx.logger, 'warn', 'shutdown.capped', { pid: entry.record.pid, killed })
    const late = closing ? await within(closing, AFTER_CAP_MS) : ((await within(exitOf(entry.child), AFTER_CAP_MS)), null)
    const report = late
      ? withCapKill(late, killed, killedAtMs)
      : await cappedReport(entry, ctx, cap, killed, killedAtMs, ownStart, joinUnderWay)
    const capped = { ...report, requestId: entry.record.requestId, capped: true }
    if ((wasRunning && exited(entry)) || wasWaiting) ctx.settle(entry, 'killed', capped)
    return capped
  } finally {
    entry.stopping--
    ctx.settleIfExited(entry)
  }
}

/**
 * The close's own report, told after the cap: the SIGKILL the cap sent (to `killed` processes) is
 * in it, so the stop reads as forced and escalated (an 'escalate' event, counted), not as the
 * graceful close it seemed to be.
 */
function withCapKill(report: CloseReport, killed: number, atMs: number): CloseReport {
  if (killed === 0) return report
  return { ...report, phase: 'forced', escalated: true, signalsSent: [...report.signalsSent, { signal: 'SIGKILL', atMs, processes: killed }] }
}

/** The report of a stop whose close did not tell how it ended (or never began) within AFTER_CAP_MS of the cap. */
async function cappedReport(
  entry: Entry,
  ctx: ShutdownContext,
  cap: Cap,
  killed: number,
  killedAtMs: number,
  ownStart: number,
  joinUnderWay: (own: CloseReport) => Promise<CloseReport>,
): Promise<CloseReport> {
  const table = cap.table.get()
  const atCap = containersAtCap(entry.child, ctx.capMs) // its container is not known to be gone
  const report: CloseReport = {
    pid: entry.record.pid,
    pgid: entry.record.pgid,
    phase: 'forced',
    closeCompleted: false,
    closeError: null,
    code: entry.record.exitCode,
    signal: entry.record.signal,
    signalsSent: killed > 0 ? [{ signal: 'SIGKILL', atMs: killedAtMs, processes: killed }] : [],
    escalated: true,
    survivors: [],
    uncertain: table === null || atCap.uncertain,
    error: table === null ? (cap.table.error ?? null) : atCap.error,
    containers: atCap.containers,
    containerSurvivors: atCap.containerSurvivors,
    gracefulMs: ctx.closeTimeoutMs,
    durationMs: performance.now() - ownStart,
    reach: reachOf(entry.child, entry.record.pgid),
  }
  // The stop of its last incarnation's leftovers, under way when this one began, joins it (bounded).
  return (await within(joinUnderWay(report), AFTER_CAP_MS)) ?? report
}

/** `promise`'s value, or null when it takes longer than `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([promise, new Promise<null>((res) => (timer = setTimeout(res, ms, null)))])
  } finally {
    clearTimeout(timer)
  }
}

/** Resolves once libuv has reaped the child (at once when it already has). */
function exitOf(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((res) => child.once('exit', () => res()))
}

/** A child whose start failed (no process, nothing to signal), waiting out a backoff: the stop only ends the wait. */
function closeNeverRan(entry: Entry, ctx: ShutdownContext): ShutdownReport {
  const report: ShutdownReport = { ...neverRanReport(entry), phase: 'already-exited', closeCompleted: false, closeError: null, gracefulMs: 0, capped: false }
  ctx.settle(entry, 'terminated', report)
  return report
}

/** The stop of a child that never ran: nothing signalled, nothing left. */
export function neverRanReport(entry: Entry): KillResult & { requestId: string | number | null } {
  return {
    pid: entry.record.pid,
    pgid: null,
    requestId: entry.record.requestId,
    signalsSent: [],
    escalated: false,
    reach: 'process', // nothing ran: nothing else to see
    code: null,
    signal: null,
    survivors: [],
    uncertain: false,
    error: null,
    containers: [],
    containerSurvivors: [],
    durationMs: 0,
  }
}

type StopFigures = Pick<KillResult, 'signalsSent' | 'escalated' | 'survivors' | 'uncertain' | 'error' | 'durationMs'>

/**
 * A stop of a child waiting out a backoff (terminate, shutdownAll), taken as it starts: the stop of
 * its last incarnation's leftovers already under way, if any, is joined to the stop's own report
 * once that is made (the function returned). The one place a stop joins that one.
 */
export function joinStopUnderWay(entry: Entry): <R extends StopFigures>(own: R) => Promise<R> {
  const underWay = entry.record.status === 'restarting' ? entry.restart?.leftovers : undefined
  const ownStart = performance.now()
  return async (own) => withStopUnderWay(own, await underWay?.stop.catch(() => undefined), ownStart - (underWay?.startedAt ?? ownStart))
}

/**
 * The stop of the leftovers that was already under way (its signals first) joins the report, so a
 * SIGKILL it sent is an escalation and what resisted it a survivor. One time origin: the report's
 * own start; that stop began `earlierByMs` before it, so its signals' atMs are moved back by that
 * much (one sent before this stop began is negative). durationMs stays this stop's own.
 */
function withStopUnderWay<R extends StopFigures>(own: R, earlier: StopFigures | undefined, earlierByMs: number): R {
  if (!earlier) return own
  return {
    ...own,
    signalsSent: [...earlier.signalsSent.map((s) => ({ ...s, atMs: s.atMs - earlierByMs })), ...own.signalsSent],
    escalated: own.escalated || earlier.escalated,
    survivors: [...new Set([...earlier.survivors, ...own.survivors])],
    uncertain: own.uncertain || earlier.uncertain,
    error: own.error ?? earlier.error,
  }
}
