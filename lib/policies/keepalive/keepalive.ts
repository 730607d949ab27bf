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
 *
 * The parts, one concern a file, are in ./keepalive/: options, work (the registry of work in
 * flight), triggers, drain (its phases), report. This file puts them together.
 */
import { typeError } from '../../ground/errors'
import { validateMs, validateOptions } from '../../ground/validate'
import { beginDrain, callDrainListener, completeDrain, type DrainParts } from './drain'
import { attachRunDurations, type KeepaliveMetrics, RunDurations } from './metrics'
import { resolveOptions } from './options'
import { Reporter } from './report'
import { installTriggers } from './triggers'
import type { Keepalive, KeepaliveOptions, ShutdownReport } from './types'
import { type Phase, WorkRegistry } from './work'

export type { KeepaliveMetrics } from './metrics'
export {
  type Keepalive,
  type KeepaliveOptions,
  type KeepaliveState,
  SHUTTING_DOWN_JSONRPC_CODE,
  ShuttingDownError,
  type ShutdownReport,
} from './types'

export function createKeepalive(options: KeepaliveOptions = {}): Keepalive {
  const resolved = resolveOptions(options)
  const phase: Phase = { state: 'running', reason: null, triggeredAt: 0, finalElapsedMs: null }
  const durations = new RunDurations()
  const work = new WorkRegistry(phase, durations)
  const reporter = new Reporter(phase, work, resolved.logger)
  let resolveClosed!: (report: ShutdownReport) => void
  const closed = new Promise<ShutdownReport>((res) => (resolveClosed = res))
  let shutdownPromise: Promise<ShutdownReport> | null = null
  const shutdown = (why = 'shutdown'): Promise<ShutdownReport> => {
    if (shutdownPromise) return shutdownPromise
    beginDrain(parts, String(why))
    shutdownPromise = completeDrain(parts, resolveClosed)
    return shutdownPromise
  }
  const triggers = installTriggers({ ...resolved, phase, inFlight: () => work.inFlight, shutdown: (why) => void shutdown(why) })
  const parts: DrainParts = { ...resolved, phase, work, reporter, triggers }
  const keepalive = facade({ parts, shutdown, closed, hookTimeoutMs: resolved.hookTimeoutMs, durations })
  attachRunDurations(keepalive, durations)
  return keepalive
}

/** keepalive.metrics(). */
function metricsOf({ phase, work }: DrainParts, durations: RunDurations): KeepaliveMetrics {
  const { state, reason, triggeredAt, finalElapsedMs } = phase
  return {
    state,
    reason,
    inFlight: work.inFlight,
    served: work.served,
    drained: work.drained,
    refused: work.refused,
    abandoned: work.abandoned,
    drainMs: state === 'running' ? null : (finalElapsedMs ?? Math.round(performance.now() - triggeredAt)),
    runDurationMs: durations.snapshot(),
  }
}

/** The object createKeepalive() returns, over its parts. */
function facade({ parts, shutdown, closed, hookTimeoutMs, durations }: {
  parts: DrainParts
  durations: RunDurations
  shutdown: (why?: string) => Promise<ShutdownReport>
  closed: Promise<ShutdownReport>
  hookTimeoutMs: number
}): Keepalive {
  const { phase, work, reporter, triggers, logger } = parts
  return {
    run: (fn) => work.run(fn),
    begin: () => work.begin(),
    shutdown,
    onShutdown(hook, hookOptions) {
      if (typeof hook !== 'function') throw typeError('ERR_INVALID_ARG_TYPE', 'onShutdown() takes a function')
      const timeoutMs = validateMs(validateOptions(hookOptions ?? {}).timeoutMs, 'timeoutMs') ?? hookTimeoutMs
      parts.hooks.push({ hook, timeoutMs })
    },
    onDrain(listener) {
      if (typeof listener !== 'function') throw typeError('ERR_INVALID_ARG_TYPE', 'onDrain() takes a function')
      parts.drainListeners.push(listener)
      if (phase.state !== 'running') callDrainListener(listener, phase.reason!, logger)
    },
    extendReport(fields) {
      if (typeof fields !== 'function') throw typeError('ERR_INVALID_ARG_TYPE', 'extendReport() takes a function')
      reporter.extensions.push(fields)
    },
    get state() {
      return phase.state
    },
    get abandonSignal() {
      return work.abandonSignal
    },
    get stats() {
      return { inFlight: work.inFlight, served: work.served, drained: work.drained, refused: work.refused, reason: phase.reason }
    },
    report: () => reporter.report(),
    metrics: () => metricsOf(parts, durations),
    closed,
    dispose: () => triggers.dispose(),
  }
}
