/**
 * createKeepalive(): the SIGTERM keepalive drain for servers (an MCP stdio server, or any process a
 * supervisor may stop at any moment). Termination becomes a graceful, observable event:
 *
 * 1. The first trigger (SIGTERM, SIGINT, SIGHUP, stdin end, the parent's death, or shutdown()) stops
 *    new work: run() rejects at once with ShuttingDownError. Stdin end is the stream's 'end' for a
 *    server that reads process.stdin, and for one that does not, the writer's hang-up of a stdin
 *    pipe or socket with nothing left unread (mechanisms/stdin-hangup.ts).
 * 2. Work in flight is waited for, up to `graceMs` (default 8000: below the host's 9 s kill grace,
 *    so the server leaves on its own terms). What is still running then is abandoned (its
 *    AbortSignal aborts).
 * 3. onShutdown hooks run in order, each bounded by `hookTimeoutMs`.
 * 4. stdout and stderr are flushed (bounded), so no JSON-RPC frame is ever cut.
 * 5. One structured line goes to stderr:
 *    {"event":"shutdown","reason":"SIGTERM","served":3,"drained":1,"abandoned":0,"refused":2,"elapsedMs":12}
 * 6. The process exits: 0 when nothing was abandoned, 1 otherwise (`exit: false` leaves that to the
 *    caller; `closed` resolves with the same report either way).
 *
 * Signals that arrive while draining do not cut it short (a host may send stdin end, then SIGTERM),
 * except a second SIGINT, which is a person pressing Ctrl+C twice: exit at once (130).
 * It never writes to stdout. It does not keep the process alive by itself until a trigger fires.
 */
import { setMaxListeners } from 'node:events'
import { drainGraceMs } from '../ground/config'
import { ReapkitError, typeError } from '../ground/errors'
import { type Logger, logEvent } from '../ground/logger'
import { binding } from '../ground/native'
import { type ParentWatcher, watchParent } from '../mechanisms/parent'
import { applicationReadsStdin, watchStdinHangup } from '../mechanisms/stdin-hangup'
import { describe, signalNumber, validateMs, validateOptions } from '../ground/validate'
import { settlesWithin } from '../ground/wait'

/** The JSON-RPC error code of ShuttingDownError, in the implementation-defined server-error range
 * (-32000 to -32099). -32000 and -32001 are taken by the MCP SDKs (connection closed, timeout). */
export const SHUTTING_DOWN_JSONRPC_CODE = -32099

/** How long a drain that the parent-death signal started waits for the parent's exit event. */
const PARENT_EXIT_SETTLE_MS = 50

/** What new work gets while a server drains: `code` 'ERR_REAPKIT_SHUTTING_DOWN', `jsonRpcCode` -32099. */
export class ShuttingDownError extends ReapkitError {
  readonly jsonRpcCode = SHUTTING_DOWN_JSONRPC_CODE
  readonly reason: string
  constructor(reason: string) {
    super('ERR_REAPKIT_SHUTTING_DOWN', `The server is shutting down (${reason}) and takes no new work`)
    this.name = 'ShuttingDownError'
    this.reason = reason
  }
}

export type KeepaliveState = 'running' | 'draining' | 'closing' | 'closed'

export interface ShutdownReport {
  event: 'shutdown'
  /** What started it: 'SIGTERM', 'SIGINT', 'SIGHUP', 'stdin-end', 'parent-death', or shutdown()'s reason. */
  reason: string
  /** Work items completed since start (drained ones included). */
  served: number
  /** Work items that were in flight at the trigger and completed within the grace. */
  drained: number
  /** Work items still running when the grace ran out. */
  abandoned: number
  /** run() calls refused while shutting down. */
  refused: number
  /** From the trigger to this report. */
  elapsedMs: number
  /** HTTP servers (withHttpKeepalive): sessions open when the drain began (1.x SDK line). */
  sessions?: number
  /** HTTP servers: long-lived SSE streams (GET streams, subscriptions/listen) ended by the close. */
  streams?: number
  /** HTTP servers: of those streams, the ones no SDK ended, so the drain ended them itself. */
  streamsEnded?: number
  /** HTTP servers: connections still open at the close, closed by it. */
  connections?: number
}

export interface KeepaliveOptions {
  /** How long to wait for work in flight. Default 8000 (REAPKIT_DRAIN_GRACE_MS). */
  graceMs?: number
  /** The signals that start the drain. Default ['SIGTERM', 'SIGINT', 'SIGHUP']; false for none. */
  signals?: NodeJS.Signals[] | false
  /**
   * Start the drain when stdin ends (as a stdio server's host closing it). Default true. A server
   * that reads process.stdin drains at its 'end'; one that never reads it, when the writer side of
   * a stdin pipe or socket is gone and no byte is left unread (main thread, POSIX; never for a
   * terminal or a file). See the README.
   */
  stdin?: boolean
  /** Start the drain when the parent process dies (watchParent, by kernel event). Default true. */
  parentDeath?: boolean
  /** Exit the process at the end (0, or 1 if work was abandoned). Default true. */
  exit?: boolean
  /**
   * Called once when the drain begins, not awaited before it: for servers whose work in flight waits
   * on something they must stop themselves (child processes, upstream streams), so that the work
   * can end within the grace. Its errors are logged.
   */
  onDrain?: (reason: string) => unknown
  /** Hooks run in order after the drain, each bounded by hookTimeoutMs. */
  onShutdown?: Array<(report: ShutdownReport) => unknown> | ((report: ShutdownReport) => unknown)
  /** Bound of each onShutdown hook. Default 2000. */
  hookTimeoutMs?: number
  /** Bound of the stdout/stderr flush. Default 2000. */
  flushTimeoutMs?: number
  /** Write the final report line to stderr. Default true. */
  finalLine?: boolean
  logger?: Logger
}

export interface Keepalive {
  /** Runs `fn` as tracked work; rejects at once with ShuttingDownError once shutting down. */
  run<T>(fn: (signal: AbortSignal) => T | Promise<T>): Promise<T>
  /**
   * Lower level: marks one work item started; call the returned done() once when it ends.
   * `done(false)` releases it without counting it served (or drained): work that turned out not to
   * be work (a notification), or that its client gave up on.
   */
  begin(): (served?: boolean) => void
  /** Starts the shutdown from code (idempotent); resolves with the report. */
  shutdown(reason?: string): Promise<ShutdownReport>
  /** Adds a hook (run after the drain, in order), bounded by `timeoutMs` (default: the hookTimeoutMs option). */
  onShutdown(hook: (report: ShutdownReport) => unknown, options?: { timeoutMs?: number }): void
  /**
   * Adds a listener called once when the drain begins (after the `onDrain` option's), or at once if
   * it has begun already. Not awaited; its errors are logged. For layers that must act at the first
   * moment of the drain (an HTTP server stops accepting, its readiness probe fails).
   */
  onDrain(listener: (reason: string) => unknown): void
  /**
   * Adds fields to the report (and its final line): `fields()` is called each time the report is
   * made. For layers that count more than work items (an HTTP server's sessions and streams). The
   * report's own fields cannot be replaced; a number two extensions both give is summed (two HTTP
   * servers under one keepalive).
   */
  extendReport(fields: () => Record<string, number | string | boolean>): void
  /**
   * Aborts when the drain gives up on the work still in flight (the grace is over and something
   * runs), before any shutdown hook: the signal run() hands its functions. For layers that must
   * answer abandoned work themselves (an HTTP server's calls still streaming).
   */
  readonly abandonSignal: AbortSignal
  readonly state: KeepaliveState
  /** Live counters, and the reason once shutting down. */
  readonly stats: { inFlight: number; served: number; drained: number; refused: number; reason: string | null }
  /** The report as it stands now. */
  report(): ShutdownReport
  /** Resolves with the final report once the shutdown has completed. */
  readonly closed: Promise<ShutdownReport>
  /** Removes every listener and watcher without shutting down (for tests and embedding). */
  dispose(): void
}

/** Waits until everything written so far to `stream` has been handed to the OS (bounded). */
function flushed(stream: NodeJS.WriteStream, ms: number): Promise<boolean> {
  if (stream.destroyed || !stream.writable) return Promise.resolve(true)
  return settlesWithin(new Promise<void>((res) => stream.write('', () => res())), ms)
}

export function createKeepalive(options: KeepaliveOptions = {}): Keepalive {
  options = validateOptions(options)
  const graceMs = validateMs(options.graceMs, 'graceMs') ?? drainGraceMs()
  const hookTimeoutMs = validateMs(options.hookTimeoutMs, 'hookTimeoutMs') ?? 2000
  const flushTimeoutMs = validateMs(options.flushTimeoutMs, 'flushTimeoutMs') ?? 2000
  const signals = options.signals === false ? [] : (options.signals ?? ['SIGTERM', 'SIGINT', 'SIGHUP'])
  if (!Array.isArray(signals)) throw typeError('ERR_INVALID_ARG_TYPE', 'The "signals" option must be an array of signal names or false')
  // All checked before any listener is added: a typo would otherwise never start the drain.
  for (const sig of signals) {
    if (typeof sig !== 'string') {
      throw typeError('ERR_INVALID_ARG_TYPE', `The "signals" option must list signal names. Received ${describe(sig)}`)
    }
    signalNumber(sig, { allowZero: false })
    if (sig === 'SIGKILL' || sig === 'SIGSTOP') {
      throw typeError('ERR_INVALID_ARG_VALUE', `The "signals" option cannot include ${sig}: it cannot be caught`)
    }
  }
  const hooks: Array<{ hook: (report: ShutdownReport) => unknown; timeoutMs: number }> = []
  if (typeof options.onShutdown === 'function') hooks.push({ hook: options.onShutdown, timeoutMs: hookTimeoutMs })
  else if (Array.isArray(options.onShutdown)) for (const hook of options.onShutdown) hooks.push({ hook, timeoutMs: hookTimeoutMs })
  const { logger } = options
  const drainListeners: Array<(reason: string) => unknown> = []
  if (options.onDrain) drainListeners.push(options.onDrain)
  const extensions: Array<() => Record<string, number | string | boolean>> = []

  let state: KeepaliveState = 'running'
  let reason: string | null = null
  let inFlight = 0
  let served = 0
  let drained = 0
  let refused = 0
  let inFlightAtTrigger = 0
  let abandoned = 0
  let triggeredAt = 0
  // One signal for all work: it aborts once, when the drain abandons whatever still runs. (An
  // AbortController per call cost ~3.6 us, thirty times the call itself.)
  let abandon: AbortController | null = null
  let drainIdle: (() => void) | null = null
  let resolveClosed!: (report: ShutdownReport) => void
  const closed = new Promise<ShutdownReport>((res) => (resolveClosed = res))
  let shutdownPromise: Promise<ShutdownReport> | null = null

  const report = (): ShutdownReport => {
    const own: ShutdownReport = {
      event: 'shutdown',
      reason: reason ?? 'none',
      served,
      drained,
      abandoned,
      refused,
      elapsedMs: triggeredAt ? Math.round(performance.now() - triggeredAt) : 0,
    }
    if (extensions.length === 0) return own
    const extra: Record<string, unknown> = {}
    for (const fields of extensions) {
      try {
        for (const [key, value] of Object.entries(fields())) {
          const before = extra[key]
          extra[key] = typeof before === 'number' && typeof value === 'number' ? before + value : value
        }
      } catch (err) {
        logEvent(logger, 'error', 'keepalive.report-extension-error', { error: String(err) })
      }
    }
    // The report's own fields last: an extension adds, it never rewrites.
    return Object.assign({ ...own }, extra, own)
  }
  const callDrainListener = (listener: (reason: string) => unknown): void => {
    Promise.resolve()
      .then(() => listener(reason!))
      .catch((err: unknown) => logEvent(logger, 'error', 'keepalive.drain-hook-error', { error: String(err) }))
  }

  const begin = (): ((served?: boolean) => void) => {
    if (state !== 'running') {
      refused++
      throw new ShuttingDownError(reason ?? 'shutdown')
    }
    inFlight++
    let ended = false
    return (counted = true) => {
      if (ended) return
      ended = true
      inFlight--
      if (counted !== false) served++
      if (counted !== false && state === 'draining') drained = Math.min(inFlightAtTrigger, drained + 1) // finished within the grace
      if (inFlight === 0) drainIdle?.()
    }
  }

  const abandonSignal = (): AbortSignal => {
    if (!abandon) {
      abandon = new AbortController()
      // Every call may add a listener to this one signal: many at once are expected, not a leak.
      setMaxListeners(0, abandon.signal)
    }
    return abandon.signal
  }

  const run = <T>(fn: (signal: AbortSignal) => T | Promise<T>): Promise<T> => {
    if (typeof fn !== 'function') return Promise.reject(typeError('ERR_INVALID_ARG_TYPE', 'run() takes a function'))
    let done: () => void
    try {
      done = begin()
    } catch (err) {
      return Promise.reject(err)
    }
    let result: Promise<T>
    try {
      result = Promise.resolve(fn(abandonSignal()))
    } catch (err) {
      result = Promise.reject(err)
    }
    return result.finally(done)
  }

  // ---- triggers ----
  // The kernel's parent-death signal is SIGHUP, its traditional meaning ("your side hung up"), so
  // that a SIGTERM always means a SIGTERM (see the parent watcher below).
  const deathSignal: NodeJS.Signals | false =
    options.parentDeath === false ? false : signals.includes('SIGHUP') ? 'SIGHUP' : signals.includes('SIGTERM') ? 'SIGTERM' : false
  const listeners: Array<() => void> = []
  let parentWatcher: ParentWatcher | null = null
  /** Our parent is no longer the one the watcher pinned (it died; we were re-parented). */
  const parentGoneNow = (): boolean =>
    parentWatcher !== null && binding !== null && binding.getppid() !== parentWatcher.parentPid
  let parentExited: () => void = () => {}
  const parentExit = new Promise<void>((resolve) => (parentExited = resolve))
  let sigints = 0
  const onSignal = (sig: NodeJS.Signals): void => {
    if (sig === 'SIGINT' && ++sigints >= 2) {
      // A person pressing Ctrl+C twice: leave now, with the conventional status.
      logEvent(logger, 'warn', 'keepalive.interrupted', { inFlight })
      process.exit(130)
    }
    // A host that signals the whole group kills our parent too: its death (the kernel's SIGHUP,
    // delivered first when both are pending, or the exit event) can reach us just before the host's
    // own signal, which is then the cause of both.
    const byParent = reason === deathSignal || reason === 'parent-death'
    if (state !== 'running' && byParent && sig !== deathSignal && performance.now() - triggeredAt < 100) {
      reason = sig
    }
    // The death signal itself: if the parent is already gone, say so.
    const parentGone =
      sig === deathSignal && parentGoneNow()
    void shutdown(parentGone ? 'parent-death' : sig)
  }
  for (const sig of signals) {
    const handler = (): void => onSignal(sig)
    process.on(sig, handler)
    listeners.push(() => process.off(sig, handler))
  }
  if (options.stdin !== false) {
    const onEnd = (): void => {
      void shutdown(parentGoneNow() ? 'parent-death' : 'stdin-end')
    }
    process.stdin.on('end', onEnd)
    process.stdin.on('close', onEnd)
    // A server that never reads stdin never gets its 'end': the writer's hang-up, seen natively
    // without reading, stands in for it once nothing is left to read. One that reads drains at
    // 'end', after its last byte; bytes left unread are the application's, for it to read first.
    const hangup = watchStdinHangup((unread) => {
      if (unread <= 0 && !applicationReadsStdin()) onEnd()
    })
    logEvent(logger, 'debug', 'keepalive.stdin-watch', { kind: hangup.kind })
    listeners.push(() => {
      process.stdin.off('end', onEnd)
      process.stdin.off('close', onEnd)
      hangup.close()
    })
  }
  if (options.parentDeath !== false) {
    // The death signal reaches us even while the event loop is blocked; the process-level exit
    // event follows within a few ms (a multi-threaded parent's main thread dies first, and getppid()
    // still names the parent until the rest of it is gone). A drain that the death signal started
    // just before that event was the parent's.
    parentWatcher = watchParent({
      deathSignal,
      onExit: () => {
        // The host's death also ends our stdin (it held the pipe): within 100 ms, that was the cause.
        const byDeath = reason === deathSignal || reason === 'stdin-end'
        if (byDeath && performance.now() - triggeredAt < 100) reason = 'parent-death'
        parentExited()
        void shutdown('parent-death')
      },
    })
    listeners.push(() => parentWatcher?.close())
  }

  const dispose = (): void => {
    for (const remove of listeners.splice(0)) remove()
  }

  const shutdown = (why = 'shutdown'): Promise<ShutdownReport> => {
    if (shutdownPromise) return shutdownPromise
    reason = String(why)
    triggeredAt = performance.now()
    inFlightAtTrigger = inFlight
    state = 'draining'
    logEvent(logger, 'info', 'keepalive.draining', { reason, inFlight })
    for (const listener of drainListeners) callDrainListener(listener)
    shutdownPromise = (async () => {
      // 2. Drain, bounded. A ref'd timer keeps the process alive for the whole grace, even if the
      // work in flight waits on nothing that would.
      if (inFlight > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, graceMs)
          drainIdle = () => {
            clearTimeout(timer)
            resolve()
          }
        })
        drainIdle = null
      }
      abandoned = inFlight
      if (abandoned > 0) abandon?.abort(new ShuttingDownError(reason!))
      // The death signal while getppid() still names the parent: a multi-threaded parent whose
      // spawning thread died first, and whose exit event is a few ms behind. Give that event a
      // moment (at most PARENT_EXIT_SETTLE_MS, only in this ambiguous case) so the report says why.
      if (reason === deathSignal && parentWatcher !== null) await settlesWithin(parentExit, PARENT_EXIT_SETTLE_MS)
      state = 'closing'
      // 3. Hooks, in order, each bounded.
      for (const { hook, timeoutMs } of hooks) {
        try {
          const ok = await settlesWithin(Promise.resolve().then(() => hook(report())), timeoutMs)
          if (!ok) logEvent(logger, 'warn', 'keepalive.hook-timeout', { hookTimeoutMs: timeoutMs })
        } catch (err) {
          logEvent(logger, 'error', 'keepalive.hook-error', { error: String(err) })
        }
      }
      // 4. Flush what was written, so that no JSON-RPC frame is cut; 5. the final line.
      await flushed(process.stdout, flushTimeoutMs)
      const final = report()
      if (options.finalLine !== false) process.stderr.write(JSON.stringify(final) + '\n')
      await flushed(process.stderr, flushTimeoutMs)
      state = 'closed'
      dispose()
      resolveClosed(final)
      if (options.exit !== false) process.exit(final.abandoned === 0 ? 0 : 1)
      return final
    })()
    return shutdownPromise
  }

  return {
    run,
    begin,
    shutdown,
    onShutdown(hook, hookOptions) {
      if (typeof hook !== 'function') throw typeError('ERR_INVALID_ARG_TYPE', 'onShutdown() takes a function')
      const timeoutMs = validateMs(validateOptions(hookOptions ?? {}).timeoutMs, 'timeoutMs') ?? hookTimeoutMs
      hooks.push({ hook, timeoutMs })
    },
    onDrain(listener) {
      if (typeof listener !== 'function') throw typeError('ERR_INVALID_ARG_TYPE', 'onDrain() takes a function')
      drainListeners.push(listener)
      if (state !== 'running') callDrainListener(listener)
    },
    extendReport(fields) {
      if (typeof fields !== 'function') throw typeError('ERR_INVALID_ARG_TYPE', 'extendReport() takes a function')
      extensions.push(fields)
    },
    get state() {
      return state
    },
    get abandonSignal() {
      return abandonSignal()
    },
    get stats() {
      return { inFlight, served, drained, refused, reason }
    },
    report,
    closed,
    dispose,
  }
}
