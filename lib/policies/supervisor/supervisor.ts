/**
 * Supervisor: a registry of the processes this process started (or adopted), and the one place
 * that stops them: one at a time (terminate), or all at once under one derived cap (shutdownAll).
 *
 * It signals only what it registered: a pid or request id it does not know is refused with
 * ERR_REAPKIT_NOT_SUPERVISED. That is the security boundary: a caller who can name a pid cannot
 * make us signal someone else's process. Every signal goes through a pinned handle, and a group is
 * never listed again once it was seen empty (its id may then belong to a stranger).
 *
 * The class reads as steps over what they share (core.ts): a child is registered and every
 * incarnation goes through the same named steps (incarnation.ts: state file, health checks
 * (health-watch.ts), its exit); an exit it did not ask for goes to the restart policy
 * (restart-flow.ts); a status ends once (settle.ts). Its stops: one child (stop-one.ts), or all of
 * them under one cap (shutdown.ts). Beside them: the registry and its indexes (registry.ts), the
 * synchronous exit backstop (backstop.ts: it cannot run when this process dies by SIGKILL or an
 * unhandled signal; handle those signals and call shutdownAll, or run under the `reapkit --
 * command` wrapper) and the state file (state.ts).
 */
import type { ChildProcess } from 'node:child_process'
import { EventEmitter, setMaxListeners } from 'node:events'
import { KILL_CONFIRM_MS_DEFAULT, SHUTDOWN_SLACK_PER_PROCESS_MS, closeTimeoutMs as envCloseTimeoutMs, killGraceMs, shutdownTimeoutMs } from '../../ground/config'
import { ReapkitError, rangeError, systemError, typeError } from '../../ground/errors'
import { type Logger, logEvent, silentLogger } from '../../ground/logger'
import { describe, validateAbortSignal, validateBoolean, validateMs, validateOptions } from '../../ground/validate'
import { eventsUntil } from '../../ground/wait'
import { removeKilledSync } from '../../mechanisms/cgroup/make'
import { containerCapSlackMs } from '../../mechanisms/container/child'
import { isChildProcess } from '../../mechanisms/exit'
import type { KillResult } from '../../mechanisms/kill'
import { type SpawnOptions, spawn } from '../../mechanisms/spawn'
import { spawnedGroupMembers } from '../../mechanisms/spawned'
import { addToBackstop, killEntrySync, removeFromBackstop, scanGroupsOrNull } from './backstop'
import type { Core } from './core'
import { type HealthOptions, healthSpec } from './health'
import { registerChild } from './incarnation'
import { MetricsRecorder, type SupervisorMetrics } from './metrics'
import { copyRecord, type ProcessRecord, type ShutdownReport, type SupervisorEvents, type SupervisorOptions } from './record'
import { type Entry, Registry, exited, live } from './registry'
import { type RestartOptions, Restarter, restartSpec } from './restart'
import { afterEnd, failsInItsErrorEvent } from './restart-flow'
import { childStreams } from './output-source'
import { layers, resolveAfter, untilReady } from './order'
import { DEFAULT_READY_TIMEOUT_MS, pipesStdout, type ReadinessOptions, readySpec } from './readiness'
import { quiesce, settle, settleIfExited } from './settle'
import { closeUnderCap } from './shutdown'
import { type LeftoverReport, STATE_TOKEN_ENV, SupervisorState } from './state'
import { stopOne } from './stop-one'
import { type OutputPage, type OutputReadOptions, OutputStore } from './output'
import type { Align } from './output-ring'
import { type RestartResult, restartRequested } from './restart-requested'

export type { Incarnation, ProcessRecord, ProcessStatus, ShutdownReport, StartError, StopReason, StopReport, SupervisorEvents, SupervisorOptions } from './record'

/**
 * spawn()'s options: reapkit's spawn options, a request id, a restart policy, a health check, a
 * readiness condition (`ready`: 'starting' until it holds) and the children it starts after
 * (`after`, by request id). With a restart policy, `signal` and `timeout` are refused
 * (ERR_INVALID_ARG_COMBINATION): every incarnation would reuse them.
 */
export type SupervisedSpawnOptions = SpawnOptions & RestartOptions & {
  requestId?: string | number
  health?: HealthOptions
  ready?: ReadinessOptions
  after?: ReadonlyArray<string | number>
}

/** A spawn checked and ready to go (#prepare): what it starts after, and the start itself. */
interface Launch {
  after: Entry[]
  /** How long start() waits for those to be ready: the child's own readiness bound. */
  waitMs: number
  start(): { child: ChildProcess; entry: Entry }
}

export class Supervisor extends EventEmitter<SupervisorEvents> {
  readonly closeTimeoutMs: number
  readonly graceMs: number
  readonly shutdownTimeoutMs: number
  readonly #capFixed: boolean
  readonly #metrics = new MetricsRecorder()
  /** Aborted by dispose(): ends every changes() iterator. */
  readonly #disposed = new AbortController()
  /** How many shutdownAll() calls are running: while any is, no exit is restarted. */
  #shuttingDown = 0
  /** Children in backoff a shutdownAll() is stopping: a concurrent one shares that stop. */
  readonly #backoffStops = new Map<Entry, Promise<ShutdownReport>>()
  /** What the steps (core.ts) share: the registry, the state file, the bounds, the events. */
  readonly #core: Core
  /** What each child spawned here was spawned with: restart() starts it again so. */
  readonly #spawnedWith = new WeakMap<Entry, SpawnOptions>()
  /** With stateFile: what the previous supervisor on that file left running, and what was done. */
  readonly leftovers: Promise<LeftoverReport | null> = Promise.resolve(null)

  constructor(options: SupervisorOptions = {}) {
    options = validateOptions(options)
    super()
    // Every follower and changes() iterator listens to it, and each removes its listener when it ends.
    setMaxListeners(0, this.#disposed.signal)
    this.closeTimeoutMs = validateMs(options.closeTimeoutMs, 'closeTimeoutMs') ?? envCloseTimeoutMs()
    this.graceMs = validateMs(options.graceMs, 'graceMs') ?? killGraceMs()
    const fixedCap = validateMs(options.shutdownTimeoutMs, 'shutdownTimeoutMs')
    this.#capFixed = fixedCap !== undefined || (process.env.REAPKIT_SHUTDOWN_TIMEOUT_MS ?? '').trim() !== ''
    this.shutdownTimeoutMs = fixedCap ?? shutdownTimeoutMs(this.closeTimeoutMs, this.graceMs)
    const logger = options.logger ?? silentLogger
    const registry = new Registry(validateHistory(options.history))
    // Before the state file: a bad `output` option must throw before a predecessor's leftovers are touched.
    const output = new OutputStore(options.output)
    const state = this.#openState(options, logger)
    this.leftovers = state?.leftovers ?? this.leftovers
    this.#core = {
      logger,
      registry,
      state,
      closeTimeoutMs: this.closeTimeoutMs,
      graceMs: this.graceMs,
      output,
      outputSource: childStreams,
      restartsAllowed: () => this.#shuttingDown === 0 && !this.#disposed.signal.aborted,
      event: (name, ...args) => this.#event(name, ...args),
      ended: (entry, end) => afterEnd(this.#core, entry, end),
    }
    if (options.backstop !== false) addToBackstop(this)
  }

  /** The state file, when the options name one (checked before it is opened). */
  #openState(options: SupervisorOptions, logger: Logger): SupervisorState | null {
    if (options.stateFile === undefined) return null
    if (typeof options.stateFile !== 'string' || options.stateFile === '') throw typeError('ERR_INVALID_ARG_TYPE', 'The "stateFile" option must be a non-empty string')
    if (process.platform === 'win32') {
      throw systemError('ENOTSUP', 'stateFile', 'A Supervisor state file does not exist on Windows yet: it tells a leftover from a recycled pid by its start time, read from /proc or ps')
    }
    if (options.onLeftovers !== undefined && options.onLeftovers !== 'stop' && options.onLeftovers !== 'adopt') {
      throw typeError('ERR_INVALID_ARG_VALUE', `The "onLeftovers" option must be 'stop' or 'adopt'. Received ${describe(options.onLeftovers)}`)
    }
    const hooks = { graceMs: this.graceMs, logger, emit: (r: ProcessRecord) => this.#event('status', r) }
    return new SupervisorState(options.stateFile, options.onLeftovers ?? 'stop', hooks)
  }

  /**
   * Starts a process with reapkit's spawn (own group, kernel death signal) and registers it. With
   * `restart` ('on-failure' or 'always'), an exit the supervisor did not ask for starts it again
   * (same command, arguments and options) under the same record and request id. A start that fails
   * (ENOENT, EACCES) is recorded ('start-failed' event; the restart policy decides), never an
   * unhandled 'error'. With `after`, each child named must be ready now (start() waits for them).
   */
  spawn(command: string, args: readonly string[] = [], options: SupervisedSpawnOptions = {}): ChildProcess {
    const launch = this.#prepare(command, args, options)
    const waiting = launch.after.find((dep) => dep.record.status !== 'running')
    if (waiting) {
      throw new ReapkitError('ERR_REAPKIT_NOT_READY', `"after" names ${JSON.stringify(waiting.record.requestId ?? waiting.record.pid)}, which is ${waiting.record.status}, not ready: await start() to wait for it`)
    }
    return launch.start().child
  }

  /**
   * spawn(), in order: waits for each child `after` names to be ready, starts this one, and resolves
   * to its record once it is ready (spawn's `ready`; without it, once it runs). Rejects, within the
   * readiness bound, when a dependency is over or not ready (ERR_REAPKIT_DEPENDENCY_FAILED,
   * ERR_REAPKIT_NOT_READY; nothing is started then) or when its own first start fails (the spawn's
   * code, or ERR_REAPKIT_NOT_READY); the child stays under its restart policy.
   */
  async start(command: string, args: readonly string[] = [], options: SupervisedSpawnOptions = {}): Promise<ProcessRecord> {
    const launch = this.#prepare(command, args, options)
    // Without dependencies it starts now, in this call (what it starts after may be named at once).
    if (launch.after.length > 0) await Promise.all(launch.after.map((dep) => untilReady(this as unknown as EventEmitter, dep, launch.waitMs, false)))
    const { entry } = launch.start()
    // Its own wait ends with its readiness bound (then the stop for 'not-ready', bounded too).
    const ownMs = launch.waitMs + this.closeTimeoutMs + this.graceMs + KILL_CONFIRM_MS_DEFAULT
    await untilReady(this as unknown as EventEmitter, entry, ownMs, true)
    return copyRecord(entry.record)
  }

  /** Every option checked (before any syscall), and the start, to run now or once its dependencies are ready. */
  #prepare(command: string, args: readonly string[], options: SupervisedSpawnOptions): Launch {
    const { requestId, restart, backoff, intensity, health, ready, after, ...spawnOptions } = validateOptions(options)
    if (requestId !== undefined) this.#checkRequestId(requestId)
    const spec = restartSpec({ restart, backoff, intensity })
    if (spec) refuseOneShotBounds(spawnOptions)
    const checks = healthSpec(health)
    const readiness = readySpec(ready, checks, pipesStdout(spawnOptions.stdio))
    const deps = resolveAfter(this.#core.registry, after)
    const start = (): { child: ChildProcess; entry: Entry } => {
      if (requestId !== undefined) this.#checkRequestId(requestId) // again: start() may have waited
      const withToken = this.#withStateToken(spawnOptions)
      const child = spawn(command, args, withToken)
      const state = this.#core.state
      const plan = {
        restart: spec ? { restarter: new Restarter(spec, state?.recentRestarts(requestId ?? null) ?? []), options: withToken } : null,
        health: checks ? { spec: checks, monitor: null } : null,
        ready: readiness ? { spec: readiness, wait: null } : null,
        after: deps,
      }
      const entry = registerChild(this.#core, child, command, [...args], requestId ?? null, state !== null, plan)
      this.#spawnedWith.set(entry, withToken)
      // ENOENT, EACCES...: Node's 'error' in the next tick, taken by the supervisor as the start's failure.
      if (child.pid === undefined) failsInItsErrorEvent(this.#core, entry, child)
      return { child, entry }
    }
    return { after: deps, waitMs: readiness?.timeoutMs ?? DEFAULT_READY_TIMEOUT_MS, start }
  }

  /** With a stateFile: the child's environment carries this incarnation's proof (supervisor/state.ts). */
  #withStateToken(options: SpawnOptions): SpawnOptions {
    const state = this.#core.state
    if (!state) return options
    return { ...options, env: { ...(options.env ?? process.env), [STATE_TOKEN_ENV]: state.token } }
  }

  /** A request id is one child's at a time: refused while a child (or an adopted leftover) holds it. */
  #checkRequestId(requestId: string | number): void {
    this.#core.registry.checkRequestId(requestId)
    if (this.#core.state?.find(requestId)?.status === 'adopted') {
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
    const known = this.#core.registry.byChild(child)
    if (known) return copyRecord(known.record)
    if (options.requestId !== undefined) this.#checkRequestId(options.requestId)
    const [command = '', ...args] = child.spawnargs
    return copyRecord(registerChild(this.#core, child, child.spawnfile ?? command, args, options.requestId ?? null).record)
  }

  /** Every registered process (copies), oldest first. */
  list(): ProcessRecord[] {
    const { state, registry } = this.#core
    return [...(state?.list() ?? []), ...[...registry.entries.values()].map((e) => copyRecord(e.record))]
  }

  /**
   * The record for a pid (the latest process with it), a request id, or a ChildProcess (the one
   * spawn() returned, or any incarnation's: a start that failed has no pid to name it by), or undefined.
   */
  get(target: number | string | ChildProcess): ProcessRecord | undefined {
    if (isChildProcess(target)) return copyOf(this.#core.registry.byChild(target))
    return copyOf(this.#core.registry.find(target)) ?? this.#core.state?.find(target)
  }

  /**
   * A page of what a child wrote (see OutputReadOptions): its newest incarnation's stdout unless
   * told otherwise, from a byte offset, aligned to characters or lines when asked. Undefined when
   * nothing of it is kept (not registered here, no pipes, or dropped by the output bounds).
   */
  output(pidOrRequestId: number | string, options: OutputReadOptions = {}): OutputPage | undefined {
    validateId(pidOrRequestId)
    return this.#core.output.read(this.#core.registry.find(pidOrRequestId)?.record, options)
  }

  /**
   * What a child writes from now on (`fromStart`: from the oldest byte kept), both streams, every
   * incarnation, as pages in order per stream; a reader slower than the child is told what the
   * bounds dropped meanwhile (`skipped`), it never queues without bound. Ends when `signal` aborts,
   * the supervisor is disposed, or the child is over and all it wrote was given.
   */
  async *followOutput(pidOrRequestId: number | string, options: { signal?: AbortSignal; fromStart?: boolean; align?: Align } = {}): AsyncGenerator<OutputPage> {
    options = validateOptions(options)
    validateId(pidOrRequestId)
    validateAbortSignal(options.signal)
    validateBoolean(options.fromStart, 'fromStart')
    const entry = this.#core.registry.find(pidOrRequestId)
    if (!entry) throw new ReapkitError('ERR_REAPKIT_NOT_SUPERVISED', `No process ${JSON.stringify(pidOrRequestId)} in this supervisor`)
    const { output } = this.#core
    // Either signal ends it (AbortSignal.any is Node 20.3+; this runs on 20.0).
    const ac = new AbortController()
    const ends = ac.signal
    const end = (): void => ac.abort()
    for (const s of [this.#disposed.signal, options.signal]) if (s?.aborted) end(); else s?.addEventListener('abort', end, { once: true })
    try {
      yield* output.follow(entry.record, { signal: ends, fromStart: options.fromStart, align: options.align, done: () => !live(entry) && exited(entry) && output.ended(entry.record) })
    } finally {
      for (const s of [this.#disposed.signal, options.signal]) s?.removeEventListener('abort', end)
    }
  }

  /**
   * Stops a running child (terminate()'s stop) and starts it again at once, same record, request id
   * and options, whatever its restart policy (restart-requested.ts). Only a child spawn() started.
   */
  async restart(pidOrRequestId: number | string, options: { graceMs?: number } = {}): Promise<RestartResult> {
    options = validateOptions(options)
    validateId(pidOrRequestId)
    const entry = this.#core.registry.find(pidOrRequestId)
    const spawnedWith = entry && this.#spawnedWith.get(entry)
    if (!entry || !spawnedWith) {
      throw new ReapkitError('ERR_REAPKIT_NOT_SUPERVISED', `Refusing to restart ${JSON.stringify(pidOrRequestId)}: this supervisor did not spawn it`)
    }
    return restartRequested(this.#core, entry, spawnedWith, validateMs(options.graceMs, 'graceMs') ?? this.graceMs)
  }

  /** A plain snapshot of what this supervisor did (see SupervisorMetrics). */
  metrics(): SupervisorMetrics {
    // Counted from the records themselves: list() copies each one, and a long-running host holds
    // up to `history` finished ones (bench/restart.mjs measured the copies at ~0.5 ms per call).
    return this.#metrics.snapshot(this.#ownRecords())
  }

  *#ownRecords(): Iterable<Readonly<ProcessRecord>> {
    if (this.#core.state) yield* this.#core.state.records()
    for (const entry of this.#core.registry.entries.values()) yield entry.record
  }

  /**
   * Stops one registered process and its group: SIGTERM, bounded wait, SIGKILL. Refuses anything it
   * did not register. A process that already exited keeps its status; members it left in its group
   * are still stopped. A child waiting out a restart backoff is not started again. `target`: a pid, a
   * request id, or the ChildProcess spawn() returned (how to stop a failed start that has neither).
   */
  async terminate(target: number | string | ChildProcess, options: { reason?: string; graceMs?: number } = {}): Promise<KillResult> {
    options = validateOptions(options)
    const child = isChildProcess(target) ? target : null
    if (!child && typeof target !== 'number' && typeof target !== 'string') {
      throw typeError(
        'ERR_INVALID_ARG_TYPE',
        `The "target" argument must be a pid (number), a request id (string or number) or a ChildProcess. Received ${describe(target)}`,
      )
    }
    const entry = child ? this.#core.registry.byChild(child) : this.#core.registry.find(target as number | string)
    const adopted = entry || child ? undefined : this.#core.state?.terminate(target as number | string, validateMs(options.graceMs, 'graceMs') ?? this.graceMs)
    if (adopted) return adopted
    if (!entry) {
      const named = child ? `the ChildProcess ${child.pid === undefined ? 'without a pid' : `of pid ${child.pid}`}` : JSON.stringify(target)
      throw new ReapkitError('ERR_REAPKIT_NOT_SUPERVISED', `Refusing to terminate ${named}: this supervisor did not start or adopt it`)
    }
    return stopOne(this.#core, entry, validateMs(options.graceMs, 'graceMs') ?? this.graceMs, options.reason ?? null)
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
      // It stays 'restarting' until then (quiesce), so the stop still tells it by its status.
      for (const entry of this.#core.registry.entries.values()) quiesce(this.#core, entry)
      return await this.#shutdown(options.close)
    } finally {
      this.#shuttingDown--
    }
  }

  async #shutdown(close: ((child: ChildProcess, record: ProcessRecord) => unknown) | undefined): Promise<ShutdownReport[]> {
    const core = this.#core
    const targets = await shutdownTargets([...core.registry.entries.values()])
    const adoptedStopped = core.state?.stopAll(this.graceMs)
    // Children started in order (`after`) are stopped in reverse, one layer after the other: each
    // layer gets its whole close and grace, so the cap grows by one of those per extra layer.
    const capMs = this.#capFixed
      ? this.shutdownTimeoutMs
      : this.shutdownTimeoutMs + (layers(targets) - 1) * (this.closeTimeoutMs + this.graceMs) +
        targets.length * SHUTDOWN_SLACK_PER_PROCESS_MS + containerCapSlackMs(targets.map((e) => e.child))
    logEvent(core.logger, 'info', 'shutdown.start', { processes: targets.length, capMs })
    const started = performance.now()
    const reports = await closeUnderCap(targets, {
      closeTimeoutMs: this.closeTimeoutMs,
      graceMs: this.graceMs,
      capMs,
      logger: core.logger,
      close,
      settle: (entry, status, report) => settle(core, entry, status, { report, reason: 'shutdown' }),
      settleIfExited: (entry) => settleIfExited(core, entry),
      backoffStops: this.#backoffStops,
    })
    await adoptedStopped
    logEvent(core.logger, 'info', 'shutdown.done', { processes: reports.length, elapsedMs: performance.now() - started })
    return reports
  }

  /**
   * Status changes as an async iterator of records, the same records as the 'status' events. It
   * ends when `signal` aborts or when the supervisor is disposed (`dispose()`): the changes already
   * queued are delivered first. Started after `dispose()`, it ends at once.
   */
  async *changes(options: { signal?: AbortSignal } = {}): AsyncGenerator<ProcessRecord> {
    options = validateOptions(options)
    validateAbortSignal(options.signal)
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
    for (const entry of this.#core.registry.entries.values()) {
      // A child waiting out a backoff ends here ('killed'), and nothing killed here is restarted.
      quiesce(this.#core, entry, 'killed')
      entry.restart = null
      killEntrySync(entry, table, cgroups)
    }
    this.#core.state?.killAllSync()
    if (killedCgroups === undefined) removeKilledSync(cgroups)
  }

  /**
   * Stops tracking (and backstopping) this supervisor's processes; they are not signalled, and none
   * is restarted any more. Every `changes()` iterator ends.
   */
  dispose(): void {
    removeFromBackstop(this)
    for (const entry of this.#core.registry.entries.values()) quiesce(this.#core, entry, 'exited')
    this.#disposed.abort()
    this.#core.state?.close()
  }

  /**
   * Counts it, then emits it, the record as a copy (the supervisor's own keeps changing): made here,
   * once per event and only when someone listens, not at each call site (a crash-looping child's
   * record holds up to 100 incarnations). A listener's error must not break the bookkeeping: it is
   * rethrown on the next tick.
   */
  #event<K extends keyof SupervisorEvents>(name: K, ...args: SupervisorEvents[K]): void {
    this.#metrics.observe(name, args)
    if (name === 'status') this.#core?.output.pokeAll() // a follow of that child may be over (one hook, not a listener per follower)
    // Nobody listens: no copy, no emit; unless emit is not EventEmitter's own (a subclass's or a
    // tracer's), which then sees every event as before.
    if (this.listenerCount(name) === 0 && this.emit === EventEmitter.prototype.emit) return
    if (name !== 'output') args = [copyRecord(args[0] as ProcessRecord), ...args.slice(1)] as SupervisorEvents[K]
    try {
      ;(this.emit as (name: K, ...args: SupervisorEvents[K]) => boolean)(name, ...args)
    } catch (err) {
      process.nextTick(() => {
        throw err
      })
    }
  }
}

const copyOf = (entry: Entry | undefined): ProcessRecord | undefined => entry && copyRecord(entry.record)

/** Running, or waiting out a backoff (live): a target; an exited one only for what its group left. */
async function shutdownTargets(entries: Entry[]): Promise<Entry[]> {
  const leftovers = await Promise.all(entries.map((e) => (live(e) ? true : spawnedGroupMembers(e.child).then((m) => m.length > 0, () => true))))
  return entries.filter((_, i) => leftovers[i])
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

function validateId(id: unknown): void {
  if (typeof id !== 'number' && typeof id !== 'string') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "pidOrRequestId" argument must be a pid (number) or a request id (string or number). Received ${describe(id)}`)
  }
}
