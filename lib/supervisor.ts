/**
 * Supervisor: a registry of the processes this process started (or adopted), and the one place
 * that stops them: one at a time (terminate), or all at once under one derived cap (shutdownAll).
 *
 * It signals only what it registered: a pid or request id it does not know is refused with
 * ERR_REAPKIT_NOT_SUPERVISED. That is the security boundary: a caller who can name a pid cannot
 * make us signal someone else's process.
 *
 * A synchronous backstop runs on process 'exit' (which Node also emits after an uncaught exception
 * or an unhandled rejection): every group still registered gets SIGKILL, synchronously. When this
 * process dies without running JavaScript (SIGKILL, an unhandled signal), the kernel's
 * parent-death signal armed by spawn() takes the children instead.
 */
import type { ChildProcess } from 'node:child_process'
import { EventEmitter, on } from 'node:events'
import { closeTimeoutMs as envCloseTimeoutMs, killGraceMs, shutdownTimeoutMs } from './config'
import { type CloseReport, closeClient } from './close'
import { ReapkitError, typeError } from './errors'
import { isChildProcess } from './exit'
import { groupMembers, groupMembersSoon } from './group'
import { openProcess } from './handle'
import { type KillResult, killProcessGracefully } from './kill'
import { type Logger, logEvent, silentLogger } from './logger'
import { binding } from './native'
import { type SpawnOptions, spawn, spawnedInfo } from './spawn'
import { validateMs } from './validate'

export type ProcessStatus = 'running' | 'exited' | 'terminated' | 'killed'

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
  /** Cap of shutdownAll. Default close + grace + 1000 (REAPKIT_SHUTDOWN_TIMEOUT_MS). */
  shutdownTimeoutMs?: number
  logger?: Logger
  /** Install the synchronous exit backstop. Default true. */
  backstop?: boolean
}

export interface ShutdownReport extends CloseReport {
  requestId: string | number | null
  /** True when the overall cap ran out and the backstop SIGKILLed it. */
  capped: boolean
}

interface Entry {
  record: ProcessRecord
  child: ChildProcess
  /** Set while we are stopping it: what the exit then counts as. */
  stopping: boolean
}

const supervisors = new Set<Supervisor>()
let backstopInstalled = false

function installBackstop(): void {
  if (backstopInstalled) return
  backstopInstalled = true
  process.on('exit', () => {
    for (const s of supervisors) s.killAllSync()
  })
}

export class Supervisor extends EventEmitter {
  readonly closeTimeoutMs: number
  readonly graceMs: number
  readonly shutdownTimeoutMs: number
  readonly #logger: Logger
  readonly #entries = new Map<number, Entry>()
  readonly #byRequest = new Map<string | number, number>()

  constructor(options: SupervisorOptions = {}) {
    super()
    this.closeTimeoutMs = validateMs(options.closeTimeoutMs, 'closeTimeoutMs') ?? envCloseTimeoutMs()
    this.graceMs = validateMs(options.graceMs, 'graceMs') ?? killGraceMs()
    this.shutdownTimeoutMs =
      validateMs(options.shutdownTimeoutMs, 'shutdownTimeoutMs') ?? shutdownTimeoutMs(this.closeTimeoutMs, this.graceMs)
    this.#logger = options.logger ?? silentLogger
    if (options.backstop !== false) {
      supervisors.add(this)
      installBackstop()
    }
  }

  /** Starts a process with reapkit's spawn (own group, kernel death signal) and registers it. */
  spawn(command: string, args: readonly string[] = [], options: SpawnOptions & { requestId?: string | number } = {}): ChildProcess {
    const { requestId, ...spawnOptions } = options
    if (requestId !== undefined) this.#checkRequestId(requestId)
    const child = spawn(command, args, spawnOptions)
    if (child.pid === undefined) return child // the 'error' event tells the caller; nothing to register
    this.#register(child, command, [...args], requestId ?? null)
    return child
  }

  /** Registers a child started elsewhere (it should lead its own process group to be stopped whole). */
  adopt(child: ChildProcess, options: { requestId?: string | number } = {}): ProcessRecord {
    if (!isChildProcess(child) || child.pid === undefined) {
      throw typeError('ERR_INVALID_ARG_TYPE', 'adopt() takes a spawned ChildProcess')
    }
    if (this.#entries.has(child.pid)) return { ...this.#entries.get(child.pid)!.record }
    if (options.requestId !== undefined) this.#checkRequestId(options.requestId)
    const [command = '', ...args] = child.spawnargs
    return { ...this.#register(child, child.spawnfile ?? command, args, options.requestId ?? null).record }
  }

  /** Every registered process (copies). */
  list(): ProcessRecord[] {
    return [...this.#entries.values()].map((e) => ({ ...e.record }))
  }

  /** The record for a pid or a request id, or undefined. */
  get(pidOrRequestId: number | string): ProcessRecord | undefined {
    const entry = this.#find(pidOrRequestId)
    return entry ? { ...entry.record } : undefined
  }

  /**
   * Stops one registered process and its group: SIGTERM, bounded wait, SIGKILL. Refuses anything it
   * did not register.
   */
  async terminate(pidOrRequestId: number | string, options: { reason?: string; graceMs?: number } = {}): Promise<KillResult> {
    const entry = this.#find(pidOrRequestId)
    if (!entry) {
      throw new ReapkitError(
        'ERR_REAPKIT_NOT_SUPERVISED',
        `Refusing to terminate ${JSON.stringify(pidOrRequestId)}: this supervisor did not start or adopt it`,
      )
    }
    entry.stopping = true
    logEvent(this.#logger, 'info', 'terminate', { pid: entry.record.pid, requestId: entry.record.requestId, reason: options.reason ?? null })
    const result = await killProcessGracefully(entry.child, {
      graceMs: validateMs(options.graceMs, 'graceMs') ?? this.graceMs,
      logger: this.#logger,
    })
    this.#settle(entry, result.escalated ? 'killed' : 'terminated')
    return result
  }

  /**
   * Closes every running process in parallel, each through the two-phase close, under one cap
   * (close + grace + 1 s unless set); whatever is left at the cap is SIGKILLed. One report each.
   */
  async shutdownAll(options: { close?: (child: ChildProcess, record: ProcessRecord) => unknown } = {}): Promise<ShutdownReport[]> {
    const entries = [...this.#entries.values()]
    const left = await Promise.all(entries.map((e) => (e.record.status === 'running' ? true : this.#groupLeft(e))))
    const running = entries.filter((_, i) => left[i])
    logEvent(this.#logger, 'info', 'shutdown.start', { processes: running.length, capMs: this.shutdownTimeoutMs })
    const started = performance.now()
    let timer: NodeJS.Timeout | undefined
    const cap = new Promise<'cap'>((res) => (timer = setTimeout(res, this.shutdownTimeoutMs, 'cap')))
    const reports = await Promise.all(
      running.map(async (entry): Promise<ShutdownReport> => {
        entry.stopping = true
        const close = options.close
        const closing = closeClient(entry.child, {
          closeTimeoutMs: this.closeTimeoutMs,
          graceMs: this.graceMs,
          logger: this.#logger,
          ...(close ? { close: () => close(entry.child, { ...entry.record }) } : {}),
        })
        const first = await Promise.race([closing, cap])
        if (first === 'cap') {
          this.#killSync(entry)
          logEvent(this.#logger, 'warn', 'shutdown.capped', { pid: entry.record.pid })
          const late = await Promise.race([closing, new Promise<null>((res) => setTimeout(res, 1000, null))])
          this.#settle(entry, 'killed')
          return { ...(late ?? emptyReport(entry)), requestId: entry.record.requestId, capped: true }
        }
        this.#settle(entry, first.phase === 'graceful' || first.phase === 'already-exited' ? 'exited' : first.escalated ? 'killed' : 'terminated')
        return { ...first, requestId: entry.record.requestId, capped: false }
      }),
    )
    clearTimeout(timer)
    logEvent(this.#logger, 'info', 'shutdown.done', { processes: reports.length, elapsedMs: performance.now() - started })
    return reports
  }

  /**
   * Status changes as an async iterator of records (ends when `signal` aborts). The same records
   * are emitted as 'status' events.
   */
  async *changes(options: { signal?: AbortSignal } = {}): AsyncGenerator<ProcessRecord> {
    try {
      for await (const [record] of on(this, 'status', options.signal ? { signal: options.signal } : {})) {
        yield record as ProcessRecord
      }
    } catch (err) {
      if ((err as { name?: string }).name !== 'AbortError') throw err
    }
  }

  /** The backstop: SIGKILL, synchronously, every group (or process) still registered and alive. */
  killAllSync(): void {
    for (const entry of this.#entries.values()) this.#killSync(entry)
  }

  /** Stops tracking (and backstopping) this supervisor's processes; they are not signalled. */
  dispose(): void {
    supervisors.delete(this)
  }

  #killSync(entry: Entry): void {
    const { pid, pgid } = entry.record
    const targets = pgid !== null ? groupMembers(pgid) : entry.record.status === 'running' ? [pid] : []
    for (const p of targets) {
      try {
        const handle = openProcess(p) // pinned, then checked: never a recycled pid
        try {
          if (pgid === null || !binding || binding.getpgid(p) === pgid) handle.signal('SIGKILL')
        } finally {
          handle.close()
        }
      } catch {
        // gone already
      }
    }
  }

  async #groupLeft(entry: Entry): Promise<boolean> {
    return entry.record.pgid !== null && (await groupMembersSoon(entry.record.pgid)).length > 0
  }

  #checkRequestId(requestId: string | number): void {
    if (typeof requestId !== 'string' && typeof requestId !== 'number') {
      throw typeError('ERR_INVALID_ARG_TYPE', 'The "requestId" option must be a string or a number')
    }
    const pid = this.#byRequest.get(requestId)
    if (pid !== undefined && this.#entries.get(pid)?.record.status === 'running') {
      throw new ReapkitError('ERR_REAPKIT_DUPLICATE_REQUEST', `Request id ${JSON.stringify(requestId)} already has a running process`)
    }
  }

  #find(pidOrRequestId: number | string): Entry | undefined {
    if (typeof pidOrRequestId === 'number' && this.#entries.has(pidOrRequestId)) return this.#entries.get(pidOrRequestId)
    const pid = this.#byRequest.get(pidOrRequestId)
    return pid === undefined ? undefined : this.#entries.get(pid)
  }

  #register(child: ChildProcess, command: string, args: string[], requestId: string | number | null): Entry {
    const record: ProcessRecord = {
      pid: child.pid!,
      pgid: spawnedInfo(child)?.pgid ?? (binding && binding.getpgid(child.pid!) === child.pid ? child.pid! : null),
      requestId,
      command,
      args,
      status: 'running',
      startedAt: new Date(),
      exitedAt: null,
      exitCode: null,
      signal: null,
    }
    const entry: Entry = { record, child, stopping: false }
    this.#entries.set(record.pid, entry)
    if (requestId !== null) this.#byRequest.set(requestId, record.pid)
    child.once('exit', (code, signal) => {
      record.exitCode = code
      record.signal = signal
      record.exitedAt = new Date()
      // Its own exit unless we were stopping it; terminate()/shutdownAll() refine the status.
      if (!entry.stopping) this.#settle(entry, 'exited')
    })
    logEvent(this.#logger, 'info', 'process.started', { pid: record.pid, pgid: record.pgid, requestId, command })
    this.emit('status', { ...record })
    return entry
  }

  #settle(entry: Entry, status: ProcessStatus): void {
    if (entry.record.status === status && status !== 'running') return
    entry.record.status = status
    entry.record.exitedAt ??= new Date()
    logEvent(this.#logger, 'info', 'process.status', { pid: entry.record.pid, requestId: entry.record.requestId, status })
    this.emit('status', { ...entry.record })
  }
}

function emptyReport(entry: Entry): CloseReport {
  return {
    pid: entry.record.pid,
    pgid: entry.record.pgid,
    phase: 'forced',
    closeCompleted: false,
    closeError: null,
    code: entry.record.exitCode,
    signal: entry.record.signal,
    signalsSent: [{ signal: 'SIGKILL', atMs: 0, processes: 1 }],
    escalated: true,
    survivors: entry.record.pgid !== null ? groupMembers(entry.record.pgid) : [],
    gracefulMs: 0,
    durationMs: 0,
  }
}
