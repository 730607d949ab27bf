/**
 * Supervisor: a registry of the processes this process started (or adopted), and the one place
 * that stops them: one at a time (terminate), or all at once under one derived cap (shutdownAll).
 *
 * It signals only what it registered: a pid or request id it does not know is refused with
 * ERR_REAPKIT_NOT_SUPERVISED. That is the security boundary: a caller who can name a pid cannot
 * make us signal someone else's process. Every signal goes through a pinned handle, and a group is
 * never listed again once it was seen empty (its id may then belong to a stranger).
 *
 * Its parts: the registry and its indexes (supervisor-registry.ts), shutdownAll's capped parallel
 * close (supervisor-shutdown.ts), the synchronous exit backstop (supervisor-backstop.ts: it cannot
 * run when this process dies by SIGKILL or an unhandled signal; handle those signals and call
 * shutdownAll, or run under the `reapkit -- command` wrapper) and the state file
 * (supervisor-state.ts).
 */
import type { ChildProcess } from 'node:child_process'
import { EventEmitter } from 'node:events'
import { SHUTDOWN_SLACK_PER_PROCESS_MS, closeTimeoutMs as envCloseTimeoutMs, killGraceMs, shutdownTimeoutMs } from '../ground/config'
import type { CloseReport } from './close'
import { ReapkitError, rangeError, systemError, typeError } from '../ground/errors'
import { isChildProcess } from '../mechanisms/exit'
import type { ProcessHandle } from '../mechanisms/handle'
import { type KillResult, killProcessGracefully } from '../mechanisms/kill'
import { type Logger, logEvent, silentLogger } from '../ground/logger'
import { type SpawnOptions, spawn, spawnedGroupMembers, spawnedInfo, trackChild } from '../mechanisms/spawn'
import { addToBackstop, killEntrySync, removeFromBackstop, scanGroupsOrNull } from './supervisor-backstop'
import { type Entry, Registry, exited, running } from './supervisor-registry'
import { closeUnderCap } from './supervisor-shutdown'
import { type LeftoverReport, STATE_TOKEN_ENV, SupervisorState } from './supervisor-state'
import { describe, validateMs, validateOptions } from '../ground/validate'
import { eventsUntil } from '../ground/wait'

/** 'adopted': running, found by a stateFile after the previous supervisor on that file crashed. */
export type ProcessStatus = 'running' | 'adopted' | 'exited' | 'terminated' | 'killed'

/** What the supervisor knows of one process. */
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

export class Supervisor extends EventEmitter {
  readonly closeTimeoutMs: number
  readonly graceMs: number
  readonly shutdownTimeoutMs: number
  readonly #logger: Logger
  readonly #capFixed: boolean
  readonly #registry: Registry
  /** Aborted by dispose(): ends every changes() iterator. */
  readonly #disposed = new AbortController()
  readonly #state: SupervisorState | null = null
  /** With stateFile: what the previous supervisor on that file left running, and what was done. */
  readonly leftovers: Promise<LeftoverReport | null> = Promise.resolve(null)

  constructor(options: SupervisorOptions = {}) {
    options = validateOptions(options)
    super()
    this.closeTimeoutMs = validateMs(options.closeTimeoutMs, 'closeTimeoutMs') ?? envCloseTimeoutMs()
    this.graceMs = validateMs(options.graceMs, 'graceMs') ?? killGraceMs()
    const fixedCap = validateMs(options.shutdownTimeoutMs, 'shutdownTimeoutMs')
    this.#capFixed = fixedCap !== undefined || (process.env.REAPKIT_SHUTDOWN_TIMEOUT_MS ?? '').trim() !== ''
    this.shutdownTimeoutMs = fixedCap ?? shutdownTimeoutMs(this.closeTimeoutMs, this.graceMs)
    this.#logger = options.logger ?? silentLogger
    const history = options.history ?? 1000
    if (typeof history !== 'number') {
      throw typeError('ERR_INVALID_ARG_TYPE', `The "history" option must be a number. Received ${describe(history)}`)
    }
    if (!Number.isSafeInteger(history) || history < 0) {
      throw rangeError('ERR_OUT_OF_RANGE', `The value of "history" is out of range. It must be an integer >= 0. Received ${history}`)
    }
    this.#registry = new Registry(history)
    if (options.stateFile !== undefined) {
      if (typeof options.stateFile !== 'string' || options.stateFile === '') throw typeError('ERR_INVALID_ARG_TYPE', 'The "stateFile" option must be a non-empty string')
      if (process.platform === 'win32') {
        throw systemError('ENOTSUP', 'stateFile', 'A Supervisor state file does not exist on Windows yet: it tells a leftover from a recycled pid by its start time, read from /proc or ps')
      }
      if (options.onLeftovers !== undefined && options.onLeftovers !== 'stop' && options.onLeftovers !== 'adopt') {
        throw typeError('ERR_INVALID_ARG_VALUE', `The "onLeftovers" option must be 'stop' or 'adopt'. Received ${describe(options.onLeftovers)}`)
      }
      this.#state = new SupervisorState(options.stateFile, options.onLeftovers ?? 'stop', { graceMs: this.graceMs, logger: this.#logger, emit: (r) => this.#emit(r) })
      this.leftovers = this.#state.leftovers
    }
    if (options.backstop !== false) addToBackstop(this)
  }

  /** Starts a process with reapkit's spawn (own group, kernel death signal) and registers it. */
  spawn(command: string, args: readonly string[] = [], options: SpawnOptions & { requestId?: string | number } = {}): ChildProcess {
    const { requestId, ...spawnOptions } = options
    if (requestId !== undefined) this.#registry.checkRequestId(requestId)
    const child = spawn(command, args, this.#withStateToken(spawnOptions))
    if (child.pid === undefined) return child // the 'error' event tells the caller; nothing to register
    this.#register(child, command, [...args], requestId ?? null, this.#state !== null)
    return child
  }

  /** With a stateFile: the child's environment carries this incarnation's proof (supervisor-state.ts). */
  #withStateToken(options: SpawnOptions): SpawnOptions {
    if (!this.#state) return options
    return { ...options, env: { ...(options.env ?? process.env), [STATE_TOKEN_ENV]: this.#state.token } }
  }

  /**
   * Registers a child started elsewhere. It is stopped as a whole group only if it leads one; a
   * child that already exited is recorded as 'exited' and never signalled.
   */
  adopt(child: ChildProcess, options: { requestId?: string | number } = {}): ProcessRecord {
    options = validateOptions(options)
    if (!isChildProcess(child) || child.pid === undefined) {
      throw typeError('ERR_INVALID_ARG_TYPE', 'adopt() takes a spawned ChildProcess')
    }
    const known = this.#registry.byChild(child)
    if (known) return { ...known.record }
    if (options.requestId !== undefined) this.#registry.checkRequestId(options.requestId)
    const [command = '', ...args] = child.spawnargs
    return { ...this.#register(child, child.spawnfile ?? command, args, options.requestId ?? null).record }
  }

  /** Every registered process (copies), oldest first. */
  list(): ProcessRecord[] {
    return [...(this.#state?.list() ?? []), ...[...this.#registry.entries.values()].map((e) => ({ ...e.record }))]
  }

  /** The record for a pid (the latest process with it) or a request id, or undefined. */
  get(pidOrRequestId: number | string): ProcessRecord | undefined {
    const entry = this.#registry.find(pidOrRequestId)
    return entry ? { ...entry.record } : this.#state?.find(pidOrRequestId)
  }

  /**
   * Stops one registered process and its group: SIGTERM, bounded wait, SIGKILL. Refuses anything it
   * did not register. A process that already exited keeps its status; members it left in its group
   * are still stopped.
   */
  async terminate(pidOrRequestId: number | string, options: { reason?: string; graceMs?: number } = {}): Promise<KillResult> {
    options = validateOptions(options)
    if (typeof pidOrRequestId !== 'number' && typeof pidOrRequestId !== 'string') {
      throw typeError(
        'ERR_INVALID_ARG_TYPE',
        `The "pidOrRequestId" argument must be a pid (number) or a request id (string or number). Received ${describe(pidOrRequestId)}`,
      )
    }
    const entry = this.#registry.find(pidOrRequestId)
    const adopted = entry ? undefined : this.#state?.terminate(pidOrRequestId, validateMs(options.graceMs, 'graceMs') ?? this.graceMs)
    if (adopted) return adopted
    if (!entry) {
      throw new ReapkitError(
        'ERR_REAPKIT_NOT_SUPERVISED',
        `Refusing to terminate ${JSON.stringify(pidOrRequestId)}: this supervisor did not start or adopt it`,
      )
    }
    const graceMs = validateMs(options.graceMs, 'graceMs') ?? this.graceMs
    logEvent(this.#logger, 'info', 'terminate', { pid: entry.record.pid, requestId: entry.record.requestId, reason: options.reason ?? null })
    entry.stopping++
    try {
      const result = await killProcessGracefully(entry.child, { graceMs, logger: this.#logger })
      // Only an exit seen is an end: a stop that could not reach the process leaves it 'running'.
      if (exited(entry)) this.#settle(entry, result.escalated ? 'killed' : 'terminated')
      return result
    } finally {
      entry.stopping--
      this.#settleIfExited(entry) // e.g. killProcessGracefully threw after the child exited
    }
  }

  /**
   * Closes every running process (and groups left behind by exited ones) in parallel, each through
   * the two-phase close, under one cap (close + grace + 1 s + 1 ms per process, unless set). Whatever is left at the cap
   * is SIGKILLed. One report each.
   */
  async shutdownAll(options: { close?: (child: ChildProcess, record: ProcessRecord) => unknown } = {}): Promise<ShutdownReport[]> {
    options = validateOptions(options)
    const entries = [...this.#registry.entries.values()]
    const leftovers = await Promise.all(
      entries.map((e) => (running(e) ? true : spawnedGroupMembers(e.child).then((m) => m.length > 0, () => true))),
    )
    const targets = entries.filter((_, i) => leftovers[i])
    const adoptedStopped = this.#state?.stopAll(this.graceMs)
    const capMs = this.#capFixed ? this.shutdownTimeoutMs : this.shutdownTimeoutMs + targets.length * SHUTDOWN_SLACK_PER_PROCESS_MS
    logEvent(this.#logger, 'info', 'shutdown.start', { processes: targets.length, capMs })
    const started = performance.now()
    const reports = await closeUnderCap(targets, {
      closeTimeoutMs: this.closeTimeoutMs,
      graceMs: this.graceMs,
      capMs,
      logger: this.#logger,
      close: options.close,
      settle: (entry, status) => this.#settle(entry, status),
      settleIfExited: (entry) => this.#settleIfExited(entry),
    })
    await adoptedStopped
    logEvent(this.#logger, 'info', 'shutdown.done', { processes: reports.length, elapsedMs: performance.now() - started })
    return reports
  }

  /**
   * Status changes as an async iterator of records, the same records as the 'status' events. It
   * ends when `signal` aborts or when the supervisor is disposed (`dispose()`): the changes already
   * queued are delivered first. Started after `dispose()`, it ends at once.
   */
  async *changes(options: { signal?: AbortSignal } = {}): AsyncGenerator<ProcessRecord> {
    options = validateOptions(options)
    yield* eventsUntil<ProcessRecord>(this, 'status', [this.#disposed.signal, options.signal])
  }

  /**
   * The backstop: SIGKILL, synchronously, every registered process still running and every member
   * of its group still alive. `table` is one listing of the process table shared by all entries
   * (null: list nothing, kill only the pinned leaders).
   */
  killAllSync(table: Map<number, number[]> | null = scanGroupsOrNull()): void {
    for (const entry of this.#registry.entries.values()) killEntrySync(entry, table)
    this.#state?.killAllSync()
  }

  /**
   * Stops tracking (and backstopping) this supervisor's processes; they are not signalled. Every
   * `changes()` iterator ends.
   */
  dispose(): void {
    removeFromBackstop(this)
    this.#disposed.abort()
    this.#state?.close()
  }

  #register(child: ChildProcess, command: string, args: string[], requestId: string | number | null, spawnedWithToken = false): Entry {
    const pid = child.pid!
    const exited = child.exitCode !== null || child.signalCode !== null
    // A child spawn() did not start gets the same tracking (pinned handle, group trust), now,
    // before libuv can reap it.
    const info = spawnedInfo(child) ?? (exited ? undefined : trackChild(child))
    const handle: ProcessHandle | null = info?.handle && !info.handle.closed ? info.handle : null
    const pgid = info?.pgid ?? null
    const record: ProcessRecord = {
      pid,
      pgid,
      requestId,
      command,
      args,
      status: exited ? 'exited' : 'running',
      startedAt: new Date(),
      exitedAt: exited ? new Date() : null,
      exitCode: child.exitCode,
      signal: child.signalCode,
    }
    const entry = this.#registry.add(record, child, handle)
    if (!exited) {
      this.#state?.add(pid, pgid, requestId, command, args, spawnedWithToken)
      child.once('exit', (code, signal) => {
        this.#state?.remove(pid)
        record.exitCode = code
        record.signal = signal
        record.exitedAt = new Date()
        if (entry.stopping === 0) this.#settle(entry, 'exited')
      })
    }
    logEvent(this.#logger, 'info', 'process.started', { pid, pgid, requestId, command })
    this.#emit(record)
    this.#registry.prune()
    return entry
  }

  #settleIfExited(entry: Entry): void {
    if (running(entry) && exited(entry)) this.#settle(entry, 'exited')
  }

  /** running -> exited | terminated | killed, once: a finished status is final. */
  #settle(entry: Entry, status: ProcessStatus): void {
    if (!running(entry) || status === 'running') return
    entry.record.status = status
    entry.record.exitedAt ??= new Date()
    logEvent(this.#logger, 'info', 'process.status', { pid: entry.record.pid, requestId: entry.record.requestId, status })
    this.#emit(entry.record)
    this.#registry.finish(entry)
  }

  #emit(record: ProcessRecord): void {
    try {
      this.emit('status', { ...record })
    } catch (err) {
      // A listener's error must not break the exit bookkeeping; surface it without throwing here.
      process.nextTick(() => {
        throw err
      })
    }
  }
}
