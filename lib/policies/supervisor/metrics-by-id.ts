/**
 * Per-child counts for the Prometheus `id` label (opt-in: registerSupervisorMetrics's `byId`): one
 * MetricsRecorder per child id (its request id; '' for a child without one), fed by the
 * supervisor's events from the registration on. At most `maxIds` distinct ids get a label of their
 * own; the events of any later id are counted under OVERFLOW_ID, so a scrape stays bounded however
 * many request ids a long-running host makes up. An id keeps its series once it has one (counters
 * never go back).
 */
import type { EventEmitter } from 'node:events'
import { rangeError, typeError } from '../../ground/errors'
import { describe } from '../../ground/validate'
import { MetricsRecorder, type SupervisorMetrics } from './metrics'
import type { ProcessRecord, SupervisorEvents } from './record'

/** The `id` label of every child past the cap. */
export const OVERFLOW_ID = '_other'

/** The default cap on distinct ids. */
export const DEFAULT_MAX_IDS = 100

/** The events the counters come from (each carries the record first). */
const COUNTED: ReadonlyArray<keyof SupervisorEvents> = ['spawn', 'exit', 'restart', 'give-up', 'health-fail', 'start-failed', 'terminate', 'escalate']

/** The `byId` option: true (the default cap) or `{ maxIds }`; null when off. */
export function byIdSpec(value: unknown): { maxIds: number } | null {
  if (value === undefined || value === false) return null
  if (value === true) return { maxIds: DEFAULT_MAX_IDS }
  if (typeof value !== 'object' || value === null) {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "byId" option must be a boolean or { maxIds }. Received ${describe(value)}`)
  }
  const { maxIds = DEFAULT_MAX_IDS } = value as { maxIds?: unknown }
  if (typeof maxIds !== 'number' || !Number.isSafeInteger(maxIds) || maxIds < 1 || maxIds > 10_000) {
    throw rangeError('ERR_OUT_OF_RANGE', `The value of "byId.maxIds" is out of range. It must be an integer >= 1 and <= 10000. Received ${describe(maxIds)}`)
  }
  return { maxIds }
}

export class MetricsById {
  readonly #maxIds: number
  readonly #byId = new Map<string, MetricsRecorder>()

  constructor(maxIds: number) {
    this.#maxIds = maxIds
  }

  /** Follows `supervisor`'s events; returns the function that stops it. */
  follow(supervisor: EventEmitter): () => void {
    const listeners = COUNTED.map((name) => {
      const listener = (...args: unknown[]): void => this.#observe(name, args)
      supervisor.on(name, listener)
      return [name, listener] as const
    })
    return () => {
      for (const [name, listener] of listeners) supervisor.off(name, listener)
    }
  }

  /** Each id's counters (children by status are not per id: they stay zero here). */
  *snapshots(): Iterable<[id: string, metrics: SupervisorMetrics]> {
    for (const [id, recorder] of this.#byId) yield [id, recorder.snapshot([])]
  }

  #observe(name: keyof SupervisorEvents, args: unknown[]): void {
    const record = args[0] as ProcessRecord
    this.#recorder(record.requestId === null ? '' : String(record.requestId)).observe(name, args as never)
  }

  #recorder(id: string): MetricsRecorder {
    const known = this.#byId.get(id)
    if (known) return known
    const label = this.#byId.size < this.#maxIds ? id : OVERFLOW_ID
    const recorder = this.#byId.get(label) ?? new MetricsRecorder()
    this.#byId.set(label, recorder)
    return recorder
  }
}
