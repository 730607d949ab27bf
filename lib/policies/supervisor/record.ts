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
import type { OutputOptions } from './output'

/** How many incarnations a record keeps (the newest); `restarts` counts every start after the first. */
const INCARNATIONS_KEPT = 100

/**
 * 'starting': its incarnation runs but is not ready yet (spawn's `ready` option; without one a child
 *   is 'running' at once), or its start is under way (a failed start settles in the next tick).
 * 'adopted': running, found by a stateFile after the previous supervisor on that file crashed.
 * 'restarting': its last incarnation exited and a restart policy waits out the backoff.
 * 'start-failed': it never ran: its start failed (ENOENT, EACCES: `error` says why) and no restart
 *   policy started it again.
 * 'given-up': its restart policy gave it up (more restarts within the window than allowed).
 * After a stop the supervisor made (terminate, shutdownAll, failed health checks, not ready in
 * time) the status is the supervisor's: 'terminated', or 'killed' when that stop needed SIGKILL.
 */
export type ProcessStatus = 'starting' | 'running' | 'adopted' | 'restarting' | 'exited' | 'terminated' | 'killed' | 'start-failed' | 'given-up'

/** Every status, in the order metrics list them. */
export const STATUSES: readonly ProcessStatus[] = ['starting', 'running', 'adopted', 'restarting', 'exited', 'terminated', 'killed', 'start-failed', 'given-up']

/** Why the supervisor stopped a child: terminate(), shutdownAll(), failed health checks, or not ready in time. */
export type StopReason = 'terminate' | 'shutdown' | 'unhealthy' | 'not-ready'

/** Why a start failed: the spawn's error code (ENOENT, EACCES...) or ERR_REAPKIT_NOT_READY, and its message. */
export interface StartError {
  code: string | null
  message: string
}

/** One run of a child: a restarted child keeps its record and request id, and gets a new incarnation. */
export interface Incarnation {
  pid: number
  pgid: number | null
  startedAt: Date
  exitedAt: Date | null
  exitCode: number | null
  signal: NodeJS.Signals | null
  /** Why it was started: 'start' (the first), or restarted after a 'failure', a clean 'exit', as 'unhealthy', or as 'requested' (`restart()`). */
  reason: StartReason
  /** The backoff waited before it started (0 for the first). */
  delayMs: number
}

/** What the supervisor knows of one child. pid, pgid, times, code and signal are its latest incarnation's. */
export interface ProcessRecord {
  /** NaN (null in JSON) while no incarnation ever ran (its start failed): never a pid to signal. */
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
  /**
   * How many times it was started again (its restart policy, restart()), a restart whose spawn
   * failed included (that one has no incarnation: nothing ran).
   */
  restarts: number
  /** Every incarnation, oldest first (the newest 100 when there were more). */
  incarnations: Incarnation[]
  /** While 'restarting': when the next incarnation is due. */
  nextStartAt: Date | null
  /** Why its last start failed (the spawn's error, or not ready in time); null once an incarnation is ready. */
  error: StartError | null
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
  /**
   * What it keeps of its children's stdout and stderr (output.ts): `{ perChildBytes, totalBytes }`
   * (defaults 64 KiB and 16 MiB), or false to keep nothing. Piped output is drained either way.
   */
  output?: OutputOptions | false
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
  /**
   * A restart policy started a new incarnation (followed by its 'spawn'), or tried to: a restart
   * whose spawn failed counts too, followed by 'start-failed' instead; `child` is then what Node
   * returned (no pid), or null when the spawn threw (no ChildProcess was made).
   */
  restart: [record: ProcessRecord, child: ChildProcess | null]
  /** A restart policy gave the child up. */
  'give-up': [record: ProcessRecord]
  /** A health check failed (`inARow`: how many in a row, counting this one). */
  'health-fail': [record: ProcessRecord, error: unknown, inARow: number]
  /**
   * A stop the supervisor made ended it: terminate(), shutdownAll(), failed health checks
   * ('unhealthy') or a readiness wait that ran out ('not-ready'); `reason` says which.
   */
  terminate: [record: ProcessRecord, report: StopReport, reason: StopReason]
  /** That stop had to send SIGKILL. */
  escalate: [record: ProcessRecord, report: StopReport, reason: StopReason]
  /**
   * A start failed: the spawn's error (ENOENT, EACCES...; the record is then 'starting' with no pid
   * yet, or 'restarting' for a restart), not ready within its bound, or an exit before it was ready
   * (after its 'exit'). The restart policy decides
   * what follows ('status' next); never an unhandled 'error' on the child.
   */
  'start-failed': [record: ProcessRecord, error: Error]
  /** It became ready (spawn's `ready`): 'starting' -> 'running'. */
  ready: [record: ProcessRecord]
}

/** A record's copy: nothing in it is shared with the supervisor's own. */
export function copyRecord(record: ProcessRecord): ProcessRecord {
  return {
    ...record,
    args: [...record.args],
    startedAt: new Date(record.startedAt),
    exitedAt: copyDate(record.exitedAt),
    nextStartAt: copyDate(record.nextStartAt),
    error: record.error ? { ...record.error } : null,
    incarnations: record.incarnations.map((i) => ({ ...i, startedAt: new Date(i.startedAt), exitedAt: copyDate(i.exitedAt) })),
  }
}

/** A Date is mutable (setTime): a copy must not hand out the supervisor's own. */
const copyDate = (date: Date | null): Date | null => (date === null ? null : new Date(date))

/**
 * The record of a child just registered (or found already exited). `starting`: it waits to be ready.
 * A child whose spawn failed (no pid: its 'error' follows) has no incarnation yet: pid NaN, 'starting'
 * until that error settles it.
 */
export function newRecord(
  child: ChildProcess,
  pgid: number | null,
  requestId: string | number | null,
  command: string,
  args: string[],
  restart: RestartPolicy,
  starting = false,
): ProcessRecord {
  const exited = child.pid !== undefined && (child.exitCode !== null || child.signalCode !== null)
  const now = new Date()
  const first: Incarnation = {
    pid: child.pid ?? NaN,
    pgid,
    startedAt: now,
    exitedAt: exited ? now : null,
    exitCode: exited ? child.exitCode : null,
    signal: exited ? child.signalCode : null,
    reason: 'start',
    delayMs: 0,
  }
  return {
    pid: first.pid,
    pgid,
    requestId,
    command,
    args,
    status: exited ? 'exited' : starting || child.pid === undefined ? 'starting' : 'running',
    startedAt: now,
    exitedAt: first.exitedAt,
    exitCode: first.exitCode,
    signal: first.signal,
    restart,
    restarts: 0,
    incarnations: child.pid === undefined ? [] : [first],
    nextStartAt: null,
    error: null,
  }
}

/** Moves a record to its next incarnation, now running (or `starting`, until it is ready). */
export function startIncarnation(record: ProcessRecord, child: ChildProcess, pgid: number | null, reason: StartReason, delayMs: number, starting = false): void {
  const startedAt = new Date()
  const status = starting ? 'starting' : 'running'
  Object.assign(record, { pid: child.pid!, pgid, status, startedAt, exitedAt: null, exitCode: null, signal: null, nextStartAt: null })
  record.restarts++
  record.incarnations.push({ pid: child.pid!, pgid, startedAt, exitedAt: null, exitCode: null, signal: null, reason, delayMs })
  if (record.incarnations.length > INCARNATIONS_KEPT) record.incarnations.shift()
}
