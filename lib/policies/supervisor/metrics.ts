/**
 * supervisor.metrics(): counters kept from the Supervisor's own events (each event is counted as
 * it is emitted, so a snapshot matches the events one for one), and the children by status.
 */
import { type ProcessRecord, type ProcessStatus, STATUSES, type StopReason, type StopReport, type SupervisorEvents } from './record'

/** Upper bounds (ms) of the stop-duration histogram's buckets; the last bucket is '+Inf'. */
export const STOP_DURATION_BUCKETS_MS = [10, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000] as const

export interface DurationHistogram {
  count: number
  /** Sum of all observations, ms. */
  sum: number
  /**
   * Cumulative, as Prometheus reads them: how many took at most `le` ms. The last `le` is the
   * string '+Inf' (as Prometheus writes it), not Infinity: JSON has no Infinity (it would write
   * null), and a plain value survives JSON, structuredClone and spreads alike. Compare with
   * `b.le === '+Inf' || ms <= b.le` (in JavaScript `ms <= '+Inf'` is false).
   */
  buckets: Array<{ le: number | '+Inf'; count: number }>
}

/** A duration histogram with fixed bucket bounds (ms; the last bucket is '+Inf'). */
export class DurationBuckets {
  #count = 0
  #sum = 0
  readonly #counts: number[]
  constructor(readonly bounds: readonly number[]) {
    this.#counts = new Array<number>(bounds.length + 1).fill(0)
  }

  observe(ms: number): void {
    this.#count++
    this.#sum += ms
    // A plain loop: the keepalive observes once per served work item (a hot path).
    let i = 0
    while (i < this.bounds.length && ms > this.bounds[i]!) i++
    this.#counts[i]!++
  }

  snapshot(): DurationHistogram {
    let cumulative = 0
    const buckets = [...this.bounds, '+Inf' as const].map((le, i) => ({ le, count: (cumulative += this.#counts[i]!) }))
    return { count: this.#count, sum: this.#sum, buckets }
  }
}

export interface SupervisorMetrics {
  /** The children (and adopted leftovers) by their status now. */
  children: Record<ProcessStatus, number>
  /** Incarnations started ('spawn' events): first starts and restarts. */
  starts: number
  /** Incarnations that ended ('exit' events), by exit code and by signal. */
  exits: { total: number; byCode: Record<string, number>; bySignal: Record<string, number> }
  /** Restarts made by restart policies ('restart' events whose new incarnation's reason is not 'requested'). */
  restarts: number
  /** Restarts someone asked for: `sup.restart()`, `reapkit restart` ('restart' events, reason 'requested'). */
  requestedRestarts: number
  /** Children given up by their restart policy ('give-up' events). */
  givenUp: number
  /** Failed health checks ('health-fail' events). */
  healthFailures: number
  /** Starts that failed: the spawn's error (ENOENT, EACCES), not ready in time or an exit before ready ('start-failed' events). */
  startFailures: number
  /**
   * Stops the supervisor made that ended a child ('terminate' events): terminate(), shutdownAll(),
   * failed health checks, not ready in time.
   */
  stops: number
  /** The same stops by reason ('terminate', 'shutdown', 'unhealthy', 'not-ready'). */
  stopsByReason: Record<StopReason, number>
  /** Of those, how many had to send SIGKILL ('escalate' events). */
  escalations: number
  /** Processes those stops left alive (they resisted even SIGKILL). */
  survivors: number
  /** How long those stops took. */
  stopDurationMs: DurationHistogram
}

const STOP_REASONS: readonly StopReason[] = ['terminate', 'shutdown', 'unhealthy', 'not-ready']

export class MetricsRecorder {
  #starts = 0
  #exits = 0
  readonly #byCode = new Map<string, number>()
  readonly #bySignal = new Map<string, number>()
  #restarts = 0
  #requestedRestarts = 0
  #givenUp = 0
  #healthFailures = 0
  #startFailures = 0
  #stops = 0
  readonly #stopsByReason = Object.fromEntries(STOP_REASONS.map((r) => [r, 0])) as Record<StopReason, number>
  #escalations = 0
  #survivors = 0
  readonly #stopDurations = new DurationBuckets(STOP_DURATION_BUCKETS_MS)

  /** One event, as the Supervisor emits it. */
  observe<K extends keyof SupervisorEvents>(name: K, args: SupervisorEvents[K]): void {
    const record = args[0] as ProcessRecord
    if (name === 'spawn') this.#starts++
    // A policy's restart whose spawn failed has no incarnation of its own (the record still says
    // 'restarting', its last incarnation is the one before): never read as requested.
    else if (name === 'restart' && record.status !== 'restarting' && record.incarnations.at(-1)?.reason === 'requested') this.#requestedRestarts++
    else if (name === 'restart') this.#restarts++
    else if (name === 'give-up') this.#givenUp++
    else if (name === 'escalate') this.#escalations++
    else if (name === 'health-fail') this.#healthFailures++
    else if (name === 'start-failed') this.#startFailures++
    else if (name === 'exit') this.#exit(record)
    else if (name === 'terminate') this.#stop(args[1] as StopReport, args[2] as StopReason)
  }

  #exit(record: ProcessRecord): void {
    this.#exits++
    if (record.signal !== null) bump(this.#bySignal, record.signal)
    else bump(this.#byCode, String(record.exitCode))
  }

  #stop(report: StopReport, reason: StopReason): void {
    this.#stops++
    this.#stopsByReason[reason]++
    this.#survivors += report.survivors.length
    this.#stopDurations.observe(report.durationMs)
  }

  /** `records` are only read (their status): the supervisor passes its own, not copies. */
  snapshot(records: Iterable<Pick<ProcessRecord, 'status'>>): SupervisorMetrics {
    const children = Object.fromEntries(STATUSES.map((s) => [s, 0])) as Record<ProcessStatus, number>
    for (const r of records) children[r.status]++
    return {
      children,
      starts: this.#starts,
      exits: { total: this.#exits, byCode: Object.fromEntries(this.#byCode), bySignal: Object.fromEntries(this.#bySignal) },
      restarts: this.#restarts,
      requestedRestarts: this.#requestedRestarts,
      givenUp: this.#givenUp,
      healthFailures: this.#healthFailures,
      startFailures: this.#startFailures,
      stops: this.#stops,
      stopsByReason: { ...this.#stopsByReason },
      escalations: this.#escalations,
      survivors: this.#survivors,
      stopDurationMs: this.#stopDurations.snapshot(),
    }
  }
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1)
}
