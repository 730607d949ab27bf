/**
 * What the Supervisor's steps share: its registry, state file, bounds and logger, and the two ways
 * a step reaches back into it (its events, and what follows an exit it did not ask for). The class
 * (supervisor.ts) builds one; each step (settle.ts, incarnation.ts, health-watch.ts,
 * restart-flow.ts) takes it as its first argument, so a step is a plain function over it.
 */
import type { Logger } from '../../ground/logger'
import type { Entry, Registry } from './registry'
import type { SupervisorEvents } from './record'
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
  /** No shutdownAll() is running and the supervisor is not disposed: an exit may be restarted. */
  restartsAllowed(): boolean
  /** Counts the event, then emits it; a listener's throw does not break the bookkeeping. */
  event<K extends keyof SupervisorEvents>(name: K, ...args: SupervisorEvents[K]): void
  /** An exit nobody here asked for (restart-flow.ts decides what follows). */
  unaskedExit(entry: Entry, code: number | null, signal: NodeJS.Signals | null): void
}
