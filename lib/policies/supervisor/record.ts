/**
 * The Supervisor's public shapes: its records (one per child, every incarnation in it), options,
 * shutdown reports and typed events; and how a record is made, copied and moved to a new
 * incarnation.
 */
import type { ChildProcess } from 'node:child_process'
import type { CloseReport } from '../close'
import type { Logger } from '../../ground/logger'
import type { KillResult } from '../../mechanisms/kill'
import type { RestartPolicy, StartReason } from './restart'

/** How many incarnations a record keeps (the newest); `restarts` counts them all. */
const INCARNATIONS_KEPT = 100

/**
 * 'adopted': running, found by a stateFile after the previous supervisor on that file crashed.
 * 'restarting': its last incarnation exited and a restart policy waits out the backoff.
 * 'given-up': its restart policy gave it up (more restarts within the window than allowed).
 */
export type ProcessStatus = 'running' | 'adopted' | 'restarting' | 'exited' | 'terminated' | 'killed' | 'given-up'

/** One run of a child: a restarted child keeps its record and request id, and gets a new incarnation. */
export interface Incarnation {
  pid: number
  pgid: number | null
  startedAt: Date
  exitedAt: Date | null
  exitCode: number | null
  signal: NodeJS.Signals | null
  /** Why it was started: 'start' (the first), or restarted after a 'failure', a clean 'exit', or as 'unhealthy'. */
  reason: StartReason
  /** The backoff waited before it started (0 for the first). */
  delayMs: number
}

/** What the supervisor knows of one child. pid, pgid, times, code and signal are its latest incarnation's. */
export interface ProcessRecord {
  pid: number
  /** Its process group, when it leads one. */
  pgid: number | null
  requestId: string | number | null
  command: string
  args: string[]
  status: ProcessStatus
  startedAt: Date
  exitedAt: Date | null
  exitCode: number | null
  /** The signal that ended it, if one did. */
  signal: NodeJS.Signals | null
  /** Its restart policy ('never' unless spawn() was given one). */
  restart: RestartPolicy
  /** How many times it was restarted. */
  restarts: number
  /** Every incarnation, oldest first (the newest 100 when there were more). */
  incarnations: Incarnation[]
  /** While 'restarting': when the next incarnation is due. */
  nextStartAt: Date | null
}

export interface SupervisorOptions {
  /** Phase 1 of each close: close, then exit. Default 2000 (REAPKIT_CLOSE_TIMEOUT_MS). */
  closeTimeoutMs?: number
  /** SIGTERM -> SIGKILL grace. Default 9000 (REAPKIT_KILL_GRACE_MS). */
  graceMs?: number
  /**
   * Cap of shutdownAll. Default: close + grace + 1000, plus 1 ms per process being stopped (the
   * slack grows with the work: each close costs the one event loop a little). Set here or by
   * REAPKIT_SHUTDOWN_TIMEOUT_MS (which may only lengthen the base), the cap is that fixed value.
   */
  shutdownTimeoutMs?: number
  logger?: Logger
  /** Install the synchronous exit backstop. Default true. */
  backstop?: boolean
  /** How many finished records list() keeps (oldest dropped first). Default 1000. */
  history?: number
  /** Record what it starts in this file, and deal with what a crashed predecessor left in it. */
  stateFile?: string
  /** What to do with a predecessor's processes still running: 'stop' (default) or 'adopt'. */
  onLeftovers?: 'stop' | 'adopt'
}

export interface ShutdownReport extends CloseReport {
  requestId: string | number | null
  /** True when the overall cap ran out and the backstop SIGKILLed what was left. */
  capped: boolean
}

/** A stop the supervisor made: terminate()'s KillResult, or shutdownAll()'s report. */
export type StopReport = KillResult | ShutdownReport

/**
 * The Supervisor's events, each with a copy of the record. For a restarted child the order is
 * 'exit', then (after the backoff) 'restart', then 'spawn'.
 */
export interface SupervisorEvents {
  /** Every status change (as changes() yields them). */
  status: [record: ProcessRecord]
  /** An incarnation started (the first, or a restart): wire its stdio here. */
  spawn: [record: ProcessRecord, child: ChildProcess]
  /**
   * An incarnation's leader exited, for any reason. The record has its exit code, signal and
   * exitedAt, and still the status it had while it ran ('running'): the status that follows
   * (restarting, exited, terminated, killed, given-up) comes with the next 'status' event (after
   * the stop, when the supervisor asked for one).
   */
  exit: [record: ProcessRecord]
  /** A restart policy started a new incarnation (followed by its 'spawn'). */
  restart: [record: ProcessRecord, child: ChildProcess]
  /** A restart policy gave the child up. */
  'give-up': [record: ProcessRecord]
  /** A health check failed (`inARow`: how many in a row, counting this one). */
  'health-fail': [record: ProcessRecord, error: unknown, inARow: number]
  /** A stop the supervisor asked for (terminate, shutdownAll) ended it. */
  terminate: [record: ProcessRecord, report: StopReport]
  /** That stop had to send SIGKILL. */
  escalate: [record: ProcessRecord, report: StopReport]
}

/** A record's copy: nothing in it is shared with the supervisor's own. */
export function copyRecord(record: ProcessRecord): ProcessRecord {
  return {
    ...record,
    args: [...record.args],
    startedAt: new Date(record.startedAt),
    exitedAt: copyDate(record.exitedAt),
    nextStartAt: copyDate(record.nextStartAt),
    incarnations: record.incarnations.map((i) => ({ ...i, startedAt: new Date(i.startedAt), exitedAt: copyDate(i.exitedAt) })),
  }
}

/** A Date is mutable (setTime): a copy must not hand out the supervisor's own. */
const copyDate = (date: Date | null): Date | null => (date === null ? null : new Date(date))

/** The record of a child just registered (or found already exited). */
export function newRecord(
  child: ChildProcess,
  pgid: number | null,
  requestId: string | number | null,
  command: string,
  args: string[],
  restart: RestartPolicy,
): ProcessRecord {
  const exited = child.exitCode !== null || child.signalCode !== null
  const now = new Date()
  const first: Incarnation = {
    pid: child.pid!,
    pgid,
    startedAt: now,
    exitedAt: exited ? now : null,
    exitCode: child.exitCode,
    signal: child.signalCode,
    reason: 'start',
    delayMs: 0,
  }
  return {
    pid: first.pid,
    pgid,
    requestId,
    command,
    args,
    status: exited ? 'exited' : 'running',
    startedAt: now,
    exitedAt: first.exitedAt,
    exitCode: first.exitCode,
    signal: first.signal,
    restart,
    restarts: 0,
    incarnations: [first],
    nextStartAt: null,
  }
}

/** Moves a record to its next incarnation, now running. */
export function startIncarnation(record: ProcessRecord, child: ChildProcess, pgid: number | null, reason: StartReason, delayMs: number): void {
  const startedAt = new Date()
  Object.assign(record, { pid: child.pid!, pgid, status: 'running', startedAt, exitedAt: null, exitCode: null, signal: null, nextStartAt: null })
  record.restarts++
  record.incarnations.push({ pid: child.pid!, pgid, startedAt, exitedAt: null, exitCode: null, signal: null, reason, delayMs })
  if (record.incarnations.length > INCARNATIONS_KEPT) record.incarnations.shift()
}
