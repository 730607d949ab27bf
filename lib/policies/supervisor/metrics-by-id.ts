/**
 * Per-child counts for the Prometheus `id` and `id_type` labels (opt-in: registerSupervisorMetrics's
 * `byId`): one MetricsRecorder per child id, fed by the supervisor's events from the registration
 * on. `id` is the request id as given (as text; '' for a child without one), `id_type` what it is:
 * 'string', 'number', 'none' (no request id) or 'overflow'. The pair names one child id, and no
 * request id can take another's series: 1 and '1', null and '' differ by their type, and a request
 * id '_other' is a 'string', never the overflow. At most `maxIds` distinct ids get series of their
 * own; the events of any later id are counted under { id: OVERFLOW_ID, id_type: 'overflow' }, so a
 * scrape stays bounded however many request ids a long-running host makes up. An id keeps its
 * series once it has one (counters never go back).
 */
import type { EventEmitter } from 'node:events'
import { rangeError, typeError } from '../../ground/errors'
import { describe } from '../../ground/validate'
import { MetricsRecorder, type SupervisorMetrics } from './metrics'
import type { ProcessRecord, SupervisorEvents } from './record'

/** The `id` label of every child past the cap (its `id_type` is 'overflow'). */
export const OVERFLOW_ID = '_other'

/** The labels of one series: the id as text, and what kind of id it is. */
export interface IdLabels {
  id: string
  id_type: 'string' | 'number' | 'none' | 'overflow'
}

const OVERFLOW: Readonly<IdLabels> = { id: OVERFLOW_ID, id_type: 'overflow' }

/** A request id's labels: as given, with its type (a number is written as JavaScript writes it). */
function labelsOf(requestId: string | number | null): IdLabels {
  if (requestId === null) return { id: '', id_type: 'none' }
  return typeof requestId === 'number' ? { id: String(requestId), id_type: 'number' } : { id: requestId, id_type: 'string' }
}

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
  /** Every id past the cap counts here. */
  #overflow: MetricsRecorder | null = null
  /** The ids with series of their own, keyed by type and id (NUL between: no type name has one). */
  readonly #byId = new Map<string, { labels: IdLabels; recorder: MetricsRecorder }>()

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
  *snapshots(): Iterable<[labels: IdLabels, metrics: SupervisorMetrics]> {
    for (const { labels, recorder } of this.#byId.values()) yield [labels, recorder.snapshot([])]
    if (this.#overflow) yield [{ ...OVERFLOW }, this.#overflow.snapshot([])]
  }

  #observe(name: keyof SupervisorEvents, args: unknown[]): void {
    const record = args[0] as ProcessRecord
    this.#recorder(labelsOf(record.requestId)).observe(name, args as never)
  }

  #recorder(labels: IdLabels): MetricsRecorder {
    const key = `${labels.id_type}\0${labels.id}`
    const known = this.#byId.get(key)
    if (known) return known.recorder
    if (this.#byId.size < this.#maxIds) {
      const own = { labels, recorder: new MetricsRecorder() }
      this.#byId.set(key, own)
      return own.recorder
    }
    // Past the cap: the overflow's, and nothing kept per id (made-up ids must not grow memory).
    return (this.#overflow ??= new MetricsRecorder())
  }
}
