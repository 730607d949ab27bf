/**
 * The keepalive's public types: its options, its report, the object createKeepalive() returns, and
 * the error new work gets while it drains.
 */
import { ReapkitError } from '../../ground/errors'
import type { Logger } from '../../ground/logger'
import type { KeepaliveMetrics } from './metrics'

/** The JSON-RPC error code of ShuttingDownError, in the implementation-defined server-error range
 * (-32000 to -32099). -32000 and -32001 are taken by the MCP SDKs (connection closed, timeout). */
export const SHUTTING_DOWN_JSONRPC_CODE = -32099

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
   * terminal or a file). See docs/keepalive-and-mcp.md (When "stdin end" fires).
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
  /**
   * A plain snapshot of the figures: state, in flight, served, drained, refused, abandoned, the
   * drain's duration, and the served work's durations as a histogram with fixed buckets.
   */
  metrics(): KeepaliveMetrics
  /** Resolves with the final report once the shutdown has completed. */
  readonly closed: Promise<ShutdownReport>
  /** Removes every listener and watcher without shutting down (for tests and embedding). */
  dispose(): void
}
