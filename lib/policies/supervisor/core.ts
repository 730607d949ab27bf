/**
 * What the Supervisor's steps share: its registry, state file, bounds and logger, and the two ways
 * a step reaches back into it (its events, and what follows an exit it did not ask for). The class
 * (supervisor.ts) builds one; each step (settle.ts, incarnation.ts, health-watch.ts,
 * restart-flow.ts) takes it as its first argument, so a step is a plain function over it.
 */
import type { Logger } from '../../ground/logger'
import type { OutputSource } from './output-source'
import type { Entry, Registry } from './registry'
import type { StopReason, StopReport, SupervisorEvents } from './record'
import type { SupervisorState } from './state'
import type { OutputStore } from './output'

export interface Core {
  readonly logger: Logger
  readonly registry: Registry
  /** With a stateFile: the file; else null. */
  readonly state: SupervisorState | null
  readonly closeTimeoutMs: number
  readonly graceMs: number
  /** Every incarnation's stdout and stderr, drained and kept (output.ts). */
  readonly output: OutputStore
  /** Where readiness reads a child's stdout: its pipe (output-source.ts), or a capture offering the same. */
  readonly outputSource: OutputSource
  /** No shutdownAll() is running and the supervisor is not disposed: an exit may be restarted. */
  restartsAllowed(): boolean
  /** Counts the event, then emits it; give it the live record: listeners get a copy (made only when there are any). A listener's throw does not break the bookkeeping. */
  event<K extends keyof SupervisorEvents>(name: K, ...args: SupervisorEvents[K]): void
  /** An incarnation ended other than by terminate() or shutdownAll() (restart-flow.ts decides what follows). */
  ended(entry: Entry, end: End): void
}

/** A stop the supervisor made, and why. */
export interface Stop {
  report: StopReport
  reason: StopReason
}

/**
 * How an incarnation ended, when neither terminate() nor shutdownAll() ended it: on its own (an
 * exit), before it ever ran (a failed start), or by a stop the supervisor made for a reason of the
 * child's own (failed health checks, not ready in time).
 */
export type End =
  | { kind: 'exit'; code: number | null; signal: NodeJS.Signals | null }
  | { kind: 'start-failed'; error: Error }
  | { kind: 'stopped'; stop: Stop & { reason: 'unhealthy' | 'not-ready' } }
