/**
 * Supervisor: a registry of the processes this process started (or adopted), and the one place
 * that stops them: one at a time (terminate), or all at once under one derived cap (shutdownAll).
 *
 * It signals only what it registered: a pid or request id it does not know is refused with
 * ERR_REAPKIT_NOT_SUPERVISED. That is the security boundary: a caller who can name a pid cannot
 * make us signal someone else's process. Every signal goes through a pinned handle, and a group is
 * never listed again once it was seen empty (its id may then belong to a stranger).
 *
 * Its parts: the registry and its indexes (supervisor/registry.ts), shutdownAll's capped parallel
 * close (supervisor/shutdown.ts), the synchronous exit backstop (supervisor/backstop.ts: it cannot
 * run when this process dies by SIGKILL or an unhandled signal; handle those signals and call
 * shutdownAll, or run under the `reapkit -- command` wrapper) and the state file
 * (supervisor/state.ts).
 */
import type { ChildProcess } from 'node:child_process'
import { EventEmitter } from 'node:events'
import { SHUTDOWN_SLACK_PER_PROCESS_MS, closeTimeoutMs as envCloseTimeoutMs, killGraceMs, shutdownTimeoutMs } from '../../ground/config'
import { ReapkitError, rangeError, systemError, typeError } from '../../ground/errors'
import { isChildProcess } from '../../mechanisms/exit'
import { containerCapSlackMs } from '../../mechanisms/container/child'
import type { ProcessHandle } from '../../mechanisms/handle'
import { type KillResult, killProcessGracefully } from '../../mechanisms/kill'
import { type Logger, logEvent, silentLogger } from '../../ground/logger'
import { type SpawnOptions, spawn, spawnedGroupMembers, spawnedInfo, trackChild } from '../../mechanisms/spawn'
import { addToBackstop, killEntrySync, removeFromBackstop, scanGroupsOrNull } from './backstop'
import { removeKilledSync } from '../../mechanisms/cgroup/make'
import { MetricsRecorder, type SupervisorMetrics } from './metrics'
import { copyRecord, newRecord, startIncarnation, type ProcessRecord, type ProcessStatus, type ShutdownReport, type StopReport, type SupervisorEvents, type SupervisorOptions } from './record'
import { type Entry, Registry, exited, live, running } from './registry'
import { type RestartOptions, Restarter, type StartReason, restartSpec } from './restart'
import { closeUnderCap, joinStopUnderWay } from './shutdown'
import { type HealthOptions, HealthMonitor, healthSpec } from './health'
import { closeClient } from '../close'
import { type LeftoverReport, STATE_TOKEN_ENV, SupervisorState } from './state'
import { describe, validateMs, validateOptions } from '../../ground/validate'
import { eventsUntil } from '../../ground/wait'

export type { Incarnation, ProcessRecord, ProcessStatus, ShutdownReport, StopReport, SupervisorEvents, SupervisorOptions } from './record'

type RestartReason = Exclude<StartReason, 'start'>

/**
 * spawn()'s options: reapkit's spawn options, a request id, a restart policy and a health check.
 * With a restart policy, `signal` and `timeout` are refused (ERR_INVALID_ARG_COMBINATION): every
 * incarnation would reuse them.
 */
export type SupervisedSpawnOptions = SpawnOptions & RestartOptions & { requestId?: string | number; health?: HealthOptions }

export class Supervisor extends EventEmitter<SupervisorEvents> {
  readonly closeTimeoutMs: number
  readonly graceMs: number
  readonly shutdownTimeoutMs: number
  readonly #logger: Logger
  readonly #capFixed: boolean
  readonly #registry: Registry
  readonly #metrics = new MetricsRecorder()
  /** Aborted by dispose(): ends every changes() iterator. */
  readonly #disposed = new AbortController()
  /** How many shutdownAll() calls are running: while any is, no exit is restarted. */
  #shuttingDown = 0
  /** Children in backoff a shutdownAll() is stopping: a concurrent one shares that stop. */
  readonly #backoffStops = new Map<Entry, Promise<ShutdownReport>>()
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
    this.#registry = new Registry(validateHistory(options.history))
    if (options.stateFile !== undefined) {
      if (typeof options.stateFile !== 'string' || options.stateFile === '') throw typeError('ERR_INVALID_ARG_TYPE', 'The "stateFile" option must be a non-empty string')
      if (process.platform === 'win32') {
        throw systemError('ENOTSUP', 'stateFile', 'A Supervisor state file does not exist on Windows yet: it tells a leftover from a recycled pid by its start time, read from /proc or ps')
      }
      if (options.onLeftovers !== undefined && options.onLeftovers !== 'stop' && options.onLeftovers !== 'adopt') {
        throw typeError('ERR_INVALID_ARG_VALUE', `The "onLeftovers" option must be 'stop' or 'adopt'. Received ${describe(options.onLeftovers)}`)
      }
      const hooks = { graceMs: this.graceMs, logger: this.#logger, emit: (r: ProcessRecord) => this.#event('status', r) }
      this.#state = new SupervisorState(options.stateFile, options.onLeftovers ?? 'stop', hooks)
      this.leftovers = this.#state.leftovers
    }
    if (options.backstop !== false) addToBackstop(this)
  }

  /**
   * Starts a process with reapkit's spawn (own group, kernel death signal) and registers it. With
   * `restart` ('on-failure' or 'always'), an exit the supervisor did not ask for starts it again
   * (same command, arguments and options) under the same record and request id.
   */
  spawn(command: string, args: readonly string[] = [], options: SupervisedSpawnOptions = {}): ChildProcess {
    const { requestId, restart, backoff, intensity, health, ...spawnOptions } = validateOptions(options)
    if (requestId !== undefined) this.#checkRequestId(requestId)
    const spec = restartSpec({ restart, backoff, intensity })
    if (spec) refuseOneShotBounds(spawnOptions)
    const checks = healthSpec(health)
    const withToken = this.#withStateToken(spawnOptions)
    const child = spawn(command, args, withToken)
    if (child.pid === undefined) return child // the 'error' event tells the caller; nothing to register
    const plan = {
      restart: spec ? { restarter: new Restarter(spec, this.#state?.recentRestarts(requestId ?? null) ?? []), options: withToken } : null,
      health: checks ? { spec: checks, monitor: null, unhealthy: false } : null,
    }
    this.#register(child, command, [...args], requestId ?? null, this.#state !== null, plan)
    return child
  }

  /** With a stateFile: the child's environment carries this incarnation's proof (supervisor/state.ts). */
  #withStateToken(options: SpawnOptions): SpawnOptions {
    if (!this.#state) return options
    return { ...options, env: { ...(options.env ?? process.env), [STATE_TOKEN_ENV]: this.#state.token } }
  }

  /** A request id is one child's at a time: refused while a child (or an adopted leftover) holds it. */
  #checkRequestId(requestId: string | number): void {
    this.#registry.checkRequestId(requestId)
    if (this.#state?.find(requestId)?.status === 'adopted') {
      throw new ReapkitError('ERR_REAPKIT_DUPLICATE_REQUEST', `Request id ${JSON.stringify(requestId)} already has a running process (adopted from the state file)`)
    }
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
    if (known) return copyRecord(known.record)
    if (options.requestId !== undefined) this.#checkRequestId(options.requestId)
    const [command = '', ...args] = child.spawnargs
    return copyRecord(this.#register(child, child.spawnfile ?? command, args, options.requestId ?? null).record)
  }

  /** Every registered process (copies), oldest first. */
  list(): ProcessRecord[] {
    return [...(this.#state?.list() ?? []), ...[...this.#registry.entries.values()].map((e) => copyRecord(e.record))]
  }

  /** The record for a pid (the latest process with it) or a request id, or undefined. */
  get(pidOrRequestId: number | string): ProcessRecord | undefined {
    const entry = this.#registry.find(pidOrRequestId)
    return entry ? copyRecord(entry.record) : this.#state?.find(pidOrRequestId)
  }

  /** A plain snapshot of what this supervisor did (see SupervisorMetrics). */
  metrics(): SupervisorMetrics {
    // Counted from the records themselves: list() copies each one, and a long-running host holds
    // up to `history` finished ones (bench/restart.mjs measured the copies at ~0.5 ms per call).
    return this.#metrics.snapshot(this.#ownRecords())
  }

  *#ownRecords(): Iterable<Readonly<ProcessRecord>> {
    if (this.#state) yield* this.#state.records()
    for (const entry of this.#registry.entries.values()) yield entry.record
  }

  /**
   * Stops one registered process and its group: SIGTERM, bounded wait, SIGKILL. Refuses anything it
   * did not register. A process that already exited keeps its status; members it left in its group
   * are still stopped. A child waiting out a restart backoff is not started again.
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
    // A stop of the last incarnation's leftovers may be under way: what it did belongs to this report.
    const joinUnderWay = joinStopUnderWay(entry)
    this.#quiesce(entry) // a backoff wait ends here, before anything is awaited
    entry.stopping++
    try {
      const result = await joinUnderWay(await killProcessGracefully(entry.child, { graceMs, logger: this.#logger }))
      // Only an exit seen is an end: a stop that could not reach the process leaves it 'running'.
      if (exited(entry)) this.#settle(entry, result.escalated ? 'killed' : 'terminated', result)
      return result
    } finally {
      entry.stopping--
      this.#settleIfExited(entry) // e.g. killProcessGracefully threw after the child exited
    }
  }

  /**
   * Closes every running process (and groups left behind by exited ones) in parallel, each through
   * the two-phase close, under one cap (close + grace + 1 s + 1 ms per process, unless set). Whatever is left at the cap
   * is SIGKILLed. One report each. Pending restarts are cancelled at once, and nothing that exits
   * meanwhile is restarted.
   */
  async shutdownAll(options: { close?: (child: ChildProcess, record: ProcessRecord) => unknown } = {}): Promise<ShutdownReport[]> {
    options = validateOptions(options)
    this.#shuttingDown++
    try {
      // A child waiting out a backoff: its restart is cancelled here, and it settles with the stop
      // below (its leftovers' stop under way included), with a 'terminate' event, as terminate() does.
      // It stays 'restarting' until then (#quiesce), so #shutdown still tells it by its status.
      for (const entry of this.#registry.entries.values()) this.#quiesce(entry)
      return await this.#shutdown(options.close)
    } finally {
      this.#shuttingDown--
    }
  }

  async #shutdown(close: ((child: ChildProcess, record: ProcessRecord) => unknown) | undefined): Promise<ShutdownReport[]> {
    const entries = [...this.#registry.entries.values()]
    // Running, or waiting out a backoff (live): a target; an exited one only for what its group left.
    const leftovers = await Promise.all(entries.map((e) => (live(e) ? true : spawnedGroupMembers(e.child).then((m) => m.length > 0, () => true))))
    const targets = entries.filter((_, i) => leftovers[i])
    const adoptedStopped = this.#state?.stopAll(this.graceMs)
    const capMs = this.#capFixed
      ? this.shutdownTimeoutMs
      : this.shutdownTimeoutMs + targets.length * SHUTDOWN_SLACK_PER_PROCESS_MS + containerCapSlackMs(targets.map((e) => e.child))
    logEvent(this.#logger, 'info', 'shutdown.start', { processes: targets.length, capMs })
    const started = performance.now()
    const reports = await closeUnderCap(targets, {
      closeTimeoutMs: this.closeTimeoutMs,
      graceMs: this.graceMs,
      capMs,
      logger: this.#logger,
      close,
      settle: (entry, status, report) => this.#settle(entry, status, report),
      settleIfExited: (entry) => this.#settleIfExited(entry),
      backoffStops: this.#backoffStops,
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
    yield* eventsUntil<ProcessRecord>(this as unknown as EventEmitter, 'status', [this.#disposed.signal, options.signal])
  }

  /**
   * The backstop: SIGKILL, synchronously, every registered process still running and every member
   * of its group still alive; no restart policy starts any of them again. `table` is one listing of the process table shared by all entries
   * (null: list nothing, kill only the pinned leaders). `killedCgroups` (the exit backstop's): the
   * children's cgroups it killed are put there, for the caller's one wait; without it, this waits
   * for them itself, once for all, at most 100 ms.
   */
  killAllSync(table: Map<number, number[]> | null = scanGroupsOrNull(), killedCgroups?: string[]): void {
    // The cgroups it kills: waited for together, once, here or by the exit backstop (its caller).
    const cgroups = killedCgroups ?? []
    for (const entry of this.#registry.entries.values()) {
      // A child waiting out a backoff ends here ('killed'), and nothing killed here is restarted.
      this.#quiesce(entry, 'killed')
      entry.restart = null
      killEntrySync(entry, table, cgroups)
    }
    this.#state?.killAllSync()
    if (killedCgroups === undefined) removeKilledSync(cgroups)
  }

  /**
   * Stops tracking (and backstopping) this supervisor's processes; they are not signalled, and none
   * is restarted any more. Every `changes()` iterator ends.
   */
  dispose(): void {
    removeFromBackstop(this)
    for (const entry of this.#registry.entries.values()) this.#quiesce(entry, 'exited')
    this.#disposed.abort()
    this.#state?.close()
  }

  /**
   * No more health checks or restarts of their own for this child: a pending backoff wait ends at
   * once (the child then settles with `status`, when given).
   */
  #quiesce(entry: Entry, status?: ProcessStatus): void {
    entry.health?.monitor?.stop()
    if (!entry.restart?.restarter.cancel()) return
    // No start is due any more: it stays 'restarting' only until the stop that ends it is over.
    entry.record.nextStartAt = null
    if (status) this.#settle(entry, status)
  }

  #register(
    child: ChildProcess,
    command: string,
    args: string[],
    requestId: string | number | null,
    spawnedWithToken = false,
    plan: Pick<Entry, 'restart' | 'health'> = { restart: null, health: null },
  ): Entry {
    const pid = child.pid!
    const exited = child.exitCode !== null || child.signalCode !== null
    // A child spawn() did not start gets the same tracking (pinned handle, group trust), now,
    // before libuv can reap it.
    const info = spawnedInfo(child) ?? (exited ? undefined : trackChild(child))
    const handle: ProcessHandle | null = info?.handle && !info.handle.closed ? info.handle : null
    const record = newRecord(child, info?.pgid ?? null, requestId, command, args, plan.restart?.restarter.spec.policy ?? 'never')
    const entry = this.#registry.add(record, child, handle, plan)
    if (!exited) this.#watch(entry, spawnedWithToken)
    logEvent(this.#logger, 'info', 'process.started', { pid, pgid: record.pgid, requestId, command })
    if (!exited) this.#event('spawn', copyRecord(record), child)
    this.#event('status', copyRecord(record))
    this.#registry.prune()
    return entry
  }

  /** Records a running incarnation in the state file, starts its health checks, and follows its exit. */
  #watch(entry: Entry, spawnedWithToken: boolean): void {
    const { child, record } = entry
    const pid = child.pid!
    this.#state?.add(pid, record.pgid, record.requestId, record.command, record.args, spawnedWithToken, spawnedInfo(child)?.container)
    this.#monitor(entry)
    child.once('exit', (code, signal) => {
      entry.health?.monitor?.stop()
      this.#state?.remove(pid)
      record.exitCode = code
      record.signal = signal
      record.exitedAt = new Date()
      Object.assign(record.incarnations.at(-1)!, { exitCode: code, signal, exitedAt: record.exitedAt })
      this.#event('exit', copyRecord(record))
      // A stop the supervisor asked for settles the status itself, and is never restarted.
      if (entry.stopping === 0) this.#afterExit(entry, code, signal)
    })
  }

  /**
   * An exit nobody here asked for (a stop for failed health checks included): the restart policy
   * decides (none: it is over).
   */
  #afterExit(entry: Entry, code: number | null, signal: NodeJS.Signals | null): void {
    const unhealthy = entry.health?.unhealthy ?? false
    if (entry.health) entry.health.unhealthy = false
    const restarter = entry.restart?.restarter
    const decision = restarter && this.#shuttingDown === 0 && !this.#disposed.signal.aborted ? restarter.decide(code, signal, unhealthy) : null
    if (decision?.action === 'restart') return this.#restartLater(entry, decision.delayMs, decision.reason)
    if (decision?.action === 'give-up') return this.#giveUp(entry)
    this.#settle(entry, unhealthy ? 'terminated' : 'exited')
  }

  /** The running incarnation's health checks, when the child has some. */
  #monitor(entry: Entry): void {
    const health = entry.health
    if (!health) return
    const child = entry.child
    health.monitor = new HealthMonitor(health.spec, {
      context: () => ({ child, record: copyRecord(entry.record) }),
      failed: (error, inARow) => {
        logEvent(this.#logger, 'warn', 'process.health-fail', { pid: child.pid, requestId: entry.record.requestId, inARow, error: String(error) })
        this.#event('health-fail', copyRecord(entry.record), error, inARow)
      },
      unhealthy: () => this.#stopUnhealthy(entry, child),
    })
  }

  /** Failed health checks: the bounded close; the exit then goes to the restart policy. */
  #stopUnhealthy(entry: Entry, child: ChildProcess): void {
    if (entry.child !== child || entry.stopping > 0 || !running(entry)) return
    entry.health!.unhealthy = true
    logEvent(this.#logger, 'warn', 'process.unhealthy', { pid: child.pid, requestId: entry.record.requestId })
    closeClient(child, { closeTimeoutMs: this.closeTimeoutMs, graceMs: this.graceMs, logger: this.#logger }).catch((err: Error) =>
      logEvent(this.#logger, 'warn', 'process.unhealthy-stop-failed', { pid: child.pid, error: err.message }),
    )
  }

  #restartLater(entry: Entry, delayMs: number, reason: RestartReason): void {
    const { record } = entry
    record.status = 'restarting'
    record.nextStartAt = new Date(Date.now() + delayMs)
    logEvent(this.#logger, 'info', 'process.restarting', { pid: record.pid, requestId: record.requestId, delayMs, reason })
    this.#event('status', copyRecord(record))
    this.#state?.noteRestarts(record.requestId, entry.restart!.restarter.recent(), entry.restart!.restarter.spec.windowMs)
    // What the last incarnation left in its group is stopped before the next one starts.
    const leftovers = killProcessGracefully(entry.child, { graceMs: this.graceMs, logger: this.#logger })
    entry.restart!.leftovers = leftovers
    entry.restart!.restarter.schedule(delayMs, leftovers, () => this.#restart(entry, delayMs, reason))
  }

  /** Starts the next incarnation under the same record. */
  #restart(entry: Entry, delayMs: number, reason: RestartReason): void {
    const { record } = entry
    entry.restart!.leftovers = undefined
    let child: ChildProcess
    try {
      child = spawn(record.command, record.args, entry.restart!.options)
    } catch (err) {
      // e.g. out of descriptors: a failure like any other, under the same intensity limit
      logEvent(this.#logger, 'warn', 'process.restart-failed', { requestId: record.requestId, error: (err as Error).message })
      return this.#afterExit(entry, null, null)
    }
    if (child.pid === undefined) {
      child.once('error', (err) => logEvent(this.#logger, 'warn', 'process.restart-failed', { requestId: record.requestId, error: err.message }))
      return this.#afterExit(entry, null, null) // counts as a failure: the intensity limit still applies
    }
    child.on('error', (err) => logEvent(this.#logger, 'warn', 'process.error', { pid: child.pid, error: err.message }))
    const info = spawnedInfo(child)
    this.#registry.reindex(entry, child, info?.handle && !info.handle.closed ? info.handle : null)
    startIncarnation(record, child, info?.pgid ?? null, reason, delayMs)
    this.#watch(entry, this.#state !== null)
    this.#state?.flush() // now: a crash right after must not hide this incarnation from the next supervisor
    logEvent(this.#logger, 'info', 'process.restarted', { pid: record.pid, requestId: record.requestId, restarts: record.restarts })
    this.#event('restart', copyRecord(record), child)
    this.#event('spawn', copyRecord(record), child)
    this.#event('status', copyRecord(record))
  }

  #giveUp(entry: Entry): void {
    const { record } = entry
    logEvent(this.#logger, 'warn', 'process.given-up', { pid: record.pid, requestId: record.requestId, restarts: record.restarts })
    this.#settle(entry, 'given-up')
    this.#event('give-up', copyRecord(record))
  }

  #settleIfExited(entry: Entry): void {
    if (live(entry) && exited(entry)) this.#settle(entry, 'exited')
  }

  /**
   * running (or restarting) -> exited | terminated | killed | given-up, once: a finished status is
   * final. `report`: the stop that ended it, when the supervisor asked for one.
   */
  #settle(entry: Entry, status: ProcessStatus, report?: StopReport): void {
    if (!live(entry) || status === 'running') return
    entry.record.status = status
    entry.record.exitedAt ??= new Date()
    entry.record.nextStartAt = null
    logEvent(this.#logger, 'info', 'process.status', { pid: entry.record.pid, requestId: entry.record.requestId, status })
    this.#event('status', copyRecord(entry.record))
    if (report) {
      this.#event('terminate', copyRecord(entry.record), report)
      if (report.escalated) this.#event('escalate', copyRecord(entry.record), report)
    }
    this.#registry.finish(entry)
  }

  /** Counts it, then emits it. A listener's error must not break the bookkeeping: it is rethrown on the next tick. */
  #event<K extends keyof SupervisorEvents>(name: K, ...args: SupervisorEvents[K]): void {
    this.#metrics.observe(name, args)
    try {
      ;(this.emit as (name: K, ...args: SupervisorEvents[K]) => boolean)(name, ...args)
    } catch (err) {
      process.nextTick(() => {
        throw err
      })
    }
  }
}

/**
 * A `signal` or `timeout` bounds one run; every incarnation is spawned with the same options, so
 * once it fires each new one would end at once: a crash loop until the child is given up.
 */
function refuseOneShotBounds(options: SpawnOptions): void {
  const given = (['signal', 'timeout'] as const).filter((name) => options[name] !== undefined)
  if (given.length > 0) {
    throw typeError('ERR_INVALID_ARG_COMBINATION', `The ${given.map((n) => `"${n}"`).join(' and ')} option cannot be combined with a "restart" policy: stop the child with terminate() instead`)
  }
}

function validateHistory(history: unknown = 1000): number {
  if (typeof history !== 'number') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "history" option must be a number. Received ${describe(history)}`)
  }
  if (!Number.isSafeInteger(history) || history < 0) {
    throw rangeError('ERR_OUT_OF_RANGE', `The value of "history" is out of range. It must be an integer >= 0. Received ${history}`)
  }
  return history
}
