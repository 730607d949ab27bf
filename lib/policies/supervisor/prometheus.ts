/**
 * A Supervisor's figures in Prometheus/OpenMetrics text, through prom-client (an optional peer
 * dependency, loaded only here), on a registry the caller passes. Gauges and counters are read from
 * supervisor.metrics() at each scrape, so they count from the supervisor's creation; the stop
 * duration histogram observes each 'terminate' event from registration on.
 */
import { ReapkitError, typeError } from '../../ground/errors'
import { describe, validateOptions } from '../../ground/validate'
import type { Supervisor } from './supervisor'
import { STOP_DURATION_BUCKETS_MS, type SupervisorMetrics } from './metrics'
import type { StopReport } from './record'
import type { EventEmitter } from 'node:events'
import { MetricsById, byIdSpec } from './metrics-by-id'

type PromClient = typeof import('prom-client')

/** A prom-client Registry (typed by shape, so that reapkit's types do not need prom-client installed). */
export interface PrometheusRegistry {
  registerMetric(metric: never): void
  removeSingleMetric(name: string): void
}

export interface PrometheusOptions {
  /** Prefix of every metric name. Default 'reapkit_supervisor_' (one supervisor per prefix on a registry). */
  prefix?: string
}

export interface SupervisorPrometheusOptions extends PrometheusOptions {
  /**
   * `id` and `id_type` labels (the child's request id as given, and 'string', 'number' or 'none')
   * on every counter, so `rate(..._restarts_total[5m]) by (id)` works. Opt-in and bounded: at most
   * `maxIds` distinct ids (default 100; true: the default), the rest under `id="_other",
   * id_type="overflow"` (no request id has that type). With it the counters count from this call
   * on, as the histogram does.
   */
  byId?: boolean | { maxIds?: number }
}

/** prom-client, or ERR_REAPKIT_MISSING_PEER when it is not installed. */
export function loadPromClient(): PromClient {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('prom-client') as PromClient
  } catch (err) {
    throw new ReapkitError('ERR_REAPKIT_MISSING_PEER', 'prom-client is not installed; it is an optional peer dependency of reapkit: npm install prom-client', { cause: err })
  }
}

/** Checks the registry and the options before anything is loaded or registered; returns the prefix. */
export function checkRegistration(registry: PrometheusRegistry, options: PrometheusOptions, defaultPrefix: string): string {
  options = validateOptions(options)
  const prefix = options.prefix ?? defaultPrefix
  if (typeof prefix !== 'string' || !/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(prefix)) {
    throw typeError('ERR_INVALID_ARG_VALUE', `The "prefix" option must be a valid Prometheus metric name prefix. Received ${describe(prefix)}`)
  }
  if (typeof registry !== 'object' || registry === null || typeof registry.registerMetric !== 'function') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "registry" argument must be a prom-client Registry. Received ${describe(registry)}`)
  }
  return prefix
}

/** Names a metric with the prefix and records it as registered (see registerAll). */
export type AddMetric = <M>(metric: string, create: (name: string) => M) => M

/**
 * Runs `define`, whose `add` registers each metric under `prefix`; when one fails (a name already
 * taken, say), the ones it registered are removed again, so nothing of ours stays half-registered
 * (the taken one is not ours). Returns what `define` returns and a function that removes them all.
 */
export function registerAll<T>(registry: PrometheusRegistry, prefix: string, define: (add: AddMetric) => T): { made: T; remove: () => void } {
  const registered: string[] = []
  const remove = (): void => {
    for (const n of registered) registry.removeSingleMetric(n)
  }
  const add: AddMetric = (metric, create) => {
    const made = create(prefix + metric)
    registered.push(prefix + metric)
    return made
  }
  try {
    return { made: define(add), remove }
  } catch (err) {
    remove()
    throw err
  }
}

type Counted = Exclude<keyof SupervisorMetrics, 'children' | 'exits' | 'stopDurationMs' | 'stops' | 'stopsByReason'>
const COUNTERS: Array<[Counted, string, string]> = [
  ['starts', 'starts_total', 'Incarnations started (first starts and restarts)'],
  ['restarts', 'restarts_total', 'Restarts made by restart policies (a restart whose spawn failed included)'],
  ['requestedRestarts', 'requested_restarts_total', 'Restarts someone asked for (restart(), reapkit restart)'],
  ['givenUp', 'given_up_total', 'Children given up by their restart policy'],
  ['healthFailures', 'health_failures_total', 'Failed health checks'],
  ['startFailures', 'start_failures_total', 'Starts that failed (a spawn error, not ready in time, or an exit before ready)'],
  ['escalations', 'escalations_total', 'Stops that had to send SIGKILL'],
  ['survivors', 'survivors_total', 'Processes left alive by those stops'],
]

/**
 * Registers `supervisor`'s metrics on `registry` (a prom-client Registry). Returns a function that
 * removes them again (and stops observing the supervisor).
 */
export function registerSupervisorMetrics(supervisor: Supervisor, registry: PrometheusRegistry, options: SupervisorPrometheusOptions = {}): () => void {
  const prefix = checkRegistration(registry, options, 'reapkit_supervisor_')
  const perChild = byIdSpec(options.byId)
  const client = loadPromClient()
  const registers = [registry as unknown as import('prom-client').Registry]
  // The counters' source: one set from metrics() (since the supervisor's creation), or one per id.
  const byId = perChild ? new MetricsById(perChild.maxIds) : null
  const counts: Counts = byId
    ? { labelNames: ['id', 'id_type'], read: () => [...byId.snapshots()].map(([labels, m]) => [{ ...labels }, m]) }
    : { labelNames: [], read: () => [[{}, supervisor.metrics()]] }
  const { made: durations, remove } = registerAll(registry, prefix, (add) => defineMetrics(client, supervisor, registers, add, counts))
  const unfollow = byId?.follow(supervisor as unknown as EventEmitter)
  const observe = (_record: unknown, report: StopReport): void => durations.observe(report.durationMs / 1000)
  supervisor.on('terminate', observe)
  return () => {
    supervisor.off('terminate', observe)
    unfollow?.()
    remove()
  }
}

/** Where the counters read their values: each set of labels with its figures. */
interface Counts {
  labelNames: string[]
  read(): Array<[labels: Record<string, string>, metrics: SupervisorMetrics]>
}

/** Creates the metrics on `registers`, each through `add` (registerAll). */
function defineMetrics(client: PromClient, supervisor: Supervisor, registers: import('prom-client').Registry[], add: AddMetric, counts: Counts): import('prom-client').Histogram {
  const { labelNames } = counts
  add('children', (name) => new client.Gauge({
    name,
    help: 'Children (and adopted leftovers) by status',
    labelNames: ['status'],
    registers,
    collect() {
      for (const [status, n] of Object.entries(supervisor.metrics().children)) this.set({ status }, n)
    },
  }))
  for (const [key, metric, help] of COUNTERS) {
    add(metric, (name) => new client.Counter({ name, help, labelNames, registers, collect() {
      this.reset()
      for (const [labels, m] of counts.read()) this.inc(labels, m[key])
    } }))
  }
  add('stops_total', (name) => new client.Counter({
    name,
    help: 'Stops the supervisor made that ended a child, by reason (terminate, shutdown, unhealthy, not-ready)',
    labelNames: [...labelNames, 'reason'],
    registers,
    collect() {
      this.reset()
      for (const [labels, m] of counts.read()) {
        for (const [reason, n] of Object.entries(m.stopsByReason)) this.inc({ ...labels, reason }, n)
      }
    },
  }))
  add('exits_total', (name) => new client.Counter({
    name,
    help: 'Incarnations that ended, by exit code or signal',
    labelNames: [...labelNames, 'code', 'signal'],
    registers,
    collect() {
      this.reset()
      for (const [labels, { exits }] of counts.read()) {
        for (const [code, n] of Object.entries(exits.byCode)) this.inc({ ...labels, code, signal: '' }, n)
        for (const [signal, n] of Object.entries(exits.bySignal)) this.inc({ ...labels, code: '', signal }, n)
      }
    },
  }))
  return add('stop_duration_seconds', (name) => new client.Histogram({
    name,
    help: 'How long the stops the supervisor made took',
    buckets: STOP_DURATION_BUCKETS_MS.map((ms) => ms / 1000),
    registers,
  }))
}
