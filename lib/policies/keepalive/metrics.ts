/**
 * keepalive.metrics(): a plain snapshot of the work registry's counters, where the shutdown stands,
 * and how long the work took (a histogram with fixed buckets, as supervisor.metrics() gives for
 * stops). One process drains once, so the drain's duration is one number, not a histogram.
 */
import { DurationBuckets, type DurationHistogram } from '../supervisor/metrics'
import type { KeepaliveState } from './types'

/** Upper bounds (ms) of the run-duration histogram's buckets; the last bucket is '+Inf'. */
export const RUN_DURATION_BUCKETS_MS = [1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000] as const

export interface KeepaliveMetrics {
  state: KeepaliveState
  /** What started the shutdown; null while running. */
  reason: string | null
  /** Work items running now. */
  inFlight: number
  /** Work items completed since start (drained ones included). */
  served: number
  /** Of those, the ones in flight at the trigger that completed within the grace. */
  drained: number
  /** run()/begin() calls refused while shutting down. */
  refused: number
  /** Work items still running when the grace ran out (0 until then). */
  abandoned: number
  /**
   * The drain's duration, ms: null while running, the time since the trigger while it drains, and
   * the final report's `elapsedMs` once it is over.
   */
  drainMs: number | null
  /** How long each served work item took, from begin() (or run()) to its done(). */
  runDurationMs: DurationHistogram
}

/** The run-duration histogram, observed as each work item is served. */
export class RunDurations extends DurationBuckets {
  readonly #listeners = new Set<(ms: number) => void>()

  constructor() {
    super(RUN_DURATION_BUCKETS_MS)
  }

  override observe(ms: number): void {
    super.observe(ms)
    if (this.#listeners.size > 0) for (const listener of this.#listeners) listener(ms)
  }

  /** Calls `listener` with each later observation (the Prometheus histogram); returns its remover. */
  listen(listener: (ms: number) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }
}

/**
 * The run durations of each keepalive createKeepalive() made, for registerKeepaliveMetrics (which
 * observes them as they come), without a public member for it on the keepalive.
 */
const durationsOf = new WeakMap<object, RunDurations>()

export function attachRunDurations(keepalive: object, durations: RunDurations): void {
  durationsOf.set(keepalive, durations)
}

export function runDurationsOf(keepalive: object): RunDurations | undefined {
  return durationsOf.get(keepalive)
}
