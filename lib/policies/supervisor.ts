/**
 * Supervisor: a registry of the processes this process started (or adopted), and the one place
 * that stops them: one at a time (terminate), or all at once under one derived cap (shutdownAll).
 *
 * It signals only what it registered: a pid or request id it does not know is refused with
 * ERR_REAPKIT_NOT_SUPERVISED. That is the security boundary: a caller who can name a pid cannot
 * make us signal someone else's process. Every signal goes through a pinned handle, and a group is
 * never listed again once it was seen empty (its id may then belong to a stranger).
 *
 * A synchronous backstop runs on process 'exit' (which Node also emits after an uncaught exception
 * or an unhandled rejection): every registered group still alive gets SIGKILL, synchronously, from
 * one listing of the process table. It cannot run when this process dies without running
 * JavaScript: by SIGKILL, or by a signal it does not handle (SIGTERM, SIGINT, SIGHUP with no
 * listener). Then the kernel's parent-death signal armed by spawn() takes the direct children, but
 * not processes they started in their groups; handle those signals (and call shutdownAll) if that
 * matters, or run under the `reapkit -- command` wrapper.
 */
import type { ChildProcess } from 'node:child_process'
import { EventEmitter } from 'node:events'
import { SHUTDOWN_SLACK_PER_PROCESS_MS, closeTimeoutMs as envCloseTimeoutMs, killGraceMs, shutdownTimeoutMs } from '../ground/config'
import { type CloseReport, closeClient } from './close'
import { ReapkitError, rangeError, systemError, typeError } from '../ground/errors'
import { isChildProcess } from '../mechanisms/exit'
import { containerCapSlackMs, containersAtCap } from '../mechanisms/container/child'
import { scanGroups } from '../mechanisms/group'
import { type ProcessHandle, openProcess } from '../mechanisms/handle'
import { type KillResult, killProcessGracefully } from '../mechanisms/kill'
import { type Logger, logEvent, silentLogger } from '../ground/logger'
import { binding } from '../ground/native'
import { type SpawnOptions, spawn, spawnedGroupMembers, spawnedGroupMembersSync, spawnedInfo, trackChild } from '../mechanisms/spawn'
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

interface Entry {
  id: number
  record: ProcessRecord
  child: ChildProcess
  /** Pinned while the process runs (spawn's handle, or one opened at adopt time). */
  handle: ProcessHandle | null
  /**
   * How many terminate()/shutdownAll() calls are stopping it now: while any is, they, not the exit
   * event, settle its status. A count, so that one call ending does not clear another's claim.
   */
  stopping: number
}

const supervisors = new Set<Supervisor>()
let backstopInstalled = false

function installBackstop(): void {
  if (backstopInstalled) return
  backstopInstalled = true
  process.on('exit', () => {
    if (supervisors.size === 0) return
    let table: Map<number, number[]> | null = null
    try {
      table = scanGroups()
    } catch {
      table = null // cannot list: still kill every pinned leader
    }
    for (const s of supervisors) s.killAllSync(table)
  })
}

const running = (e: Entry): boolean => e.record.status === 'running'
/** libuv has reaped the leader: its end is known, not assumed. */
const exited = (e: Entry): boolean => e.child.exitCode !== null || e.child.signalCode !== null

export class Supervisor extends EventEmitter {
  readonly closeTimeoutMs: number
  readonly graceMs: number
  readonly shutdownTimeoutMs: number
  readonly #logger: Logger
  readonly #history: number
  readonly #capFixed: boolean
  readonly #entries = new Map<number, Entry>()
  readonly #byPid = new Map<number, Entry>()
  readonly #byRequest = new Map<string | number, Entry>()
  readonly #byChild = new Map<ChildProcess, Entry>()
  /** Entries whose status is final, in the order they settled (what #prune drops from). */
  readonly #finished = new Set<Entry>()
  #nextId = 1
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
    this.#history = history
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
    if (options.backstop !== false) {
      supervisors.add(this)
      installBackstop()
    }
  }

  /** Starts a process with reapkit's spawn (own group, kernel death signal) and registers it. */
  spawn(command: string, args: readonly string[] = [], options: SpawnOptions & { requestId?: string | number } = {}): ChildProcess {
    const { requestId, ...spawnOptions } = options
    if (requestId !== undefined) this.#checkRequestId(requestId)
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
    const known = this.#byChild.get(child)
    if (known) return { ...known.record }
    if (options.requestId !== undefined) this.#checkRequestId(options.requestId)
    const [command = '', ...args] = child.spawnargs
    return { ...this.#register(child, child.spawnfile ?? command, args, options.requestId ?? null).record }
  }

  /** Every registered process (copies), oldest first. */
  list(): ProcessRecord[] {
    return [...(this.#state?.list() ?? []), ...[...this.#entries.values()].map((e) => ({ ...e.record }))]
  }

  /** The record for a pid (the latest process with it) or a request id, or undefined. */
  get(pidOrRequestId: number | string): ProcessRecord | undefined {
    const entry = this.#find(pidOrRequestId)
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
    const entry = this.#find(pidOrRequestId)
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
    const entries = [...this.#entries.values()]
    const leftovers = await Promise.all(
      entries.map((e) => (running(e) ? true : spawnedGroupMembers(e.child).then((m) => m.length > 0, () => true))),
    )
    const targets = entries.filter((_, i) => leftovers[i])
    const adoptedStopped = this.#state?.stopAll(this.graceMs)
    const capMs = this.#capFixed
      ? this.shutdownTimeoutMs
      : this.shutdownTimeoutMs + targets.length * SHUTDOWN_SLACK_PER_PROCESS_MS + containerCapSlackMs(targets.map((e) => e.child))
    logEvent(this.#logger, 'info', 'shutdown.start', { processes: targets.length, capMs })
    const started = performance.now()
    let capTimer: NodeJS.Timeout | undefined
    const cap = new Promise<'cap'>((res) => (capTimer = setTimeout(res, capMs, 'cap')))
    // When the cap fires for everyone at once, one listing of the process table serves them all.
    let capTable: Map<number, number[]> | null | undefined
    let capTableError: Error | undefined
    const tableAtCap = (): Map<number, number[]> | null => {
      if (capTable !== undefined) return capTable
      try {
        return (capTable = scanGroups())
      } catch (err) {
        capTableError = err as Error
        return (capTable = null)
      }
    }
    const reports = await Promise.all(
      targets.map(async (entry): Promise<ShutdownReport> => {
        const wasRunning = running(entry)
        entry.stopping++
        const close = options.close
        const closing = closeClient(entry.child, {
          closeTimeoutMs: this.closeTimeoutMs,
          graceMs: this.graceMs,
          logger: this.#logger,
          ...(close ? { close: () => close(entry.child, { ...entry.record }) } : {}),
        })
        try {
          const first = await Promise.race([closing, cap])
          if (first !== 'cap') {
            if (wasRunning && exited(entry)) this.#settle(entry, first.phase !== 'forced' ? 'exited' : first.escalated ? 'killed' : 'terminated')
            return { ...first, requestId: entry.record.requestId, capped: false }
          }
          const table = tableAtCap()
          const killed = this.#killSync(entry, table)
          logEvent(this.#logger, 'warn', 'shutdown.capped', { pid: entry.record.pid, killed })
          let timer: NodeJS.Timeout | undefined
          const late = await Promise.race([closing, new Promise<null>((res) => (timer = setTimeout(res, 1000, null)))])
          clearTimeout(timer)
          if (wasRunning && exited(entry)) this.#settle(entry, 'killed')
          const atCap = containersAtCap(entry.child, capMs) // its container is not known to be gone
          const report: CloseReport = late ?? {
            pid: entry.record.pid,
            pgid: entry.record.pgid,
            phase: 'forced',
            closeCompleted: false,
            closeError: null,
            code: entry.record.exitCode,
            signal: entry.record.signal,
            signalsSent: killed > 0 ? [{ signal: 'SIGKILL', atMs: performance.now() - started, processes: killed }] : [],
            escalated: true,
            survivors: [],
            uncertain: table === null || atCap.uncertain,
            error: table === null ? (capTableError ?? null) : atCap.error,
            containers: atCap.containers,
            containerSurvivors: atCap.containerSurvivors,
            gracefulMs: this.closeTimeoutMs,
            durationMs: performance.now() - started,
          }
          return { ...report, requestId: entry.record.requestId, capped: true }
        } finally {
          entry.stopping--
          this.#settleIfExited(entry)
        }
      }),
    )
    await adoptedStopped
    clearTimeout(capTimer)
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
    for (const entry of this.#entries.values()) this.#killSync(entry, table)
    this.#state?.killAllSync()
  }

  /**
   * Stops tracking (and backstopping) this supervisor's processes; they are not signalled. Every
   * `changes()` iterator ends.
   */
  dispose(): void {
    supervisors.delete(this)
    this.#disposed.abort()
    this.#state?.close()
  }

  /** SIGKILLs what remains of one entry; returns how many processes (or groups) were signalled. */
  #killSync(entry: Entry, table: Map<number, number[]> | null): number {
    const { child } = entry
    const pgid = entry.record.pgid
    const unreaped = child.exitCode === null && child.signalCode === null
    let killed = 0
    if (unreaped && pgid !== null && binding) {
      // The unreaped leader holds the group id: one atomic killpg, no listing needed.
      try {
        binding.killpg(pgid, 9)
        killed++
      } catch {
        // gone already
      }
      return killed
    }
    if (unreaped && entry.handle && !entry.handle.closed) {
      try {
        entry.handle.signal('SIGKILL')
        killed++
      } catch {
        // exited
      }
    }
    // A leader that is gone: its group only under the group-trust rule (spawn.ts).
    for (const p of pgid !== null && table !== null ? spawnedGroupMembersSync(child, table) : []) {
      try {
        const handle = openProcess(p) // pinned, then checked: never a recycled pid
        try {
          if (!binding || binding.getpgid(p) === pgid) {
            handle.signal('SIGKILL')
            killed++
          }
        } finally {
          handle.close()
        }
      } catch {
        // gone already
      }
    }
    return killed
  }

  #checkRequestId(requestId: string | number): void {
    if (typeof requestId !== 'string' && typeof requestId !== 'number') {
      throw typeError('ERR_INVALID_ARG_TYPE', 'The "requestId" option must be a string or a number')
    }
    const holder = this.#byRequest.get(requestId)
    if (holder && running(holder)) {
      throw new ReapkitError('ERR_REAPKIT_DUPLICATE_REQUEST', `Request id ${JSON.stringify(requestId)} already has a running process`)
    }
  }

  /**
   * A number is first the pid of a running process, then a request id, then the pid of a finished
   * one (JSON-RPC ids are small integers; so are pids in a container).
   */
  #find(pidOrRequestId: number | string): Entry | undefined {
    const byPid = typeof pidOrRequestId === 'number' ? this.#byPid.get(pidOrRequestId) : undefined
    if (byPid && running(byPid)) return byPid
    return this.#byRequest.get(pidOrRequestId) ?? byPid
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
    const entry: Entry = { id: this.#nextId++, record, child, handle, stopping: 0 }
    this.#entries.set(entry.id, entry)
    this.#byPid.set(pid, entry)
    this.#byChild.set(child, entry)
    if (requestId !== null) this.#byRequest.set(requestId, entry)
    if (exited) this.#finished.add(entry)
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
    this.#prune()
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
    this.#finished.add(entry)
    logEvent(this.#logger, 'info', 'process.status', { pid: entry.record.pid, requestId: entry.record.requestId, status })
    this.#emit(entry.record)
    this.#prune()
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

  /**
   * Drops the oldest finished records beyond the history limit. O(1) amortized per status change:
   * it looks only at `#finished` (settled entries, oldest first) and only while there are more of
   * them than the limit, never at the running ones.
   */
  #prune(): void {
    if (this.#finished.size <= this.#history) return
    // Finished and provably over: its leader reaped and its group (if any) gone. One that is not
    // over yet (its group still has members) stays, and is looked at again on a later change.
    const over = (e: Entry): boolean => {
      if (e.child.exitCode === null && e.child.signalCode === null) return false
      const info = spawnedInfo(e.child)
      return !info || info.pgid === null || info.groupGone
    }
    let excess = this.#finished.size - this.#history
    for (const e of this.#finished) {
      if (excess <= 0) break
      if (!over(e)) continue
      this.#finished.delete(e)
      this.#entries.delete(e.id)
      if (this.#byPid.get(e.record.pid) === e) this.#byPid.delete(e.record.pid)
      if (e.record.requestId !== null && this.#byRequest.get(e.record.requestId) === e) this.#byRequest.delete(e.record.requestId)
      this.#byChild.delete(e.child)
      excess--
    }
  }
}

function scanGroupsOrNull(): Map<number, number[]> | null {
  try {
    return scanGroups()
  } catch {
    return null
  }
}
