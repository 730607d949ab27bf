/**
 * A keepalive's figures in Prometheus/OpenMetrics text, through prom-client (an optional peer
 * dependency, loaded only when this is called), on a registry the caller passes: the same way as
 * registerSupervisorMetrics. Gauges and counters are read from keepalive.metrics() at each scrape,
 * so they count from the keepalive's creation; the run-duration histogram observes each served work
 * item from registration on.
 */
import { describe } from '../../ground/validate'
import { typeError } from '../../ground/errors'
import { type AddMetric, checkRegistration, loadPromClient, type PrometheusOptions, type PrometheusRegistry, registerAll } from '../supervisor/prometheus'
import { type KeepaliveMetrics, RUN_DURATION_BUCKETS_MS, runDurationsOf } from './metrics'
import type { Keepalive, KeepaliveState } from './types'

type PromClient = typeof import('prom-client')
type Registry = import('prom-client').Registry

const STATES: KeepaliveState[] = ['running', 'draining', 'closing', 'closed']

type Counted = 'served' | 'drained' | 'refused' | 'abandoned'
const COUNTERS: Array<[Counted, string, string]> = [
  ['served', 'served_total', 'Work items completed since start (drained ones included)'],
  ['drained', 'drained_total', 'Work items in flight at the trigger that completed within the grace'],
  ['refused', 'refused_total', 'Work refused while shutting down'],
  ['abandoned', 'abandoned_total', 'Work items still running when the grace ran out'],
]

/**
 * Registers `keepalive`'s metrics (one made by createKeepalive) on `registry` (a prom-client
 * Registry), named `<prefix>state`, `in_flight`, `served_total`, `drained_total`, `refused_total`,
 * `abandoned_total`, `drain_seconds` and `run_duration_seconds`; prefix 'reapkit_keepalive_' by
 * default. Returns a function that removes them again (and stops observing the keepalive).
 */
export function registerKeepaliveMetrics(keepalive: Keepalive, registry: PrometheusRegistry, options: PrometheusOptions = {}): () => void {
  const durations = runDurationsOf(keepalive) // undefined for anything createKeepalive() did not make (WeakMap.get)
  if (!durations) {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "keepalive" argument must be a keepalive made by createKeepalive(). Received ${describe(keepalive)}`)
  }
  const prefix = checkRegistration(registry, options, 'reapkit_keepalive_')
  const client = loadPromClient()
  const registers = [registry as unknown as Registry]
  const { made: histogram, remove } = registerAll(registry, prefix, (add) => defineMetrics(client, () => keepalive.metrics(), registers, add))
  const stop = durations.listen((ms) => histogram.observe(ms / 1000))
  return () => {
    stop()
    remove()
  }
}

/** Creates the metrics on `registers`, each through `add` (registerAll). */
function defineMetrics(client: PromClient, metrics: () => KeepaliveMetrics, registers: Registry[], add: AddMetric): import('prom-client').Histogram {
  add('state', (name) => new client.Gauge({ name, help: 'The keepalive\'s state: 1 for the current one', labelNames: ['state'], registers, collect() {
    const now = metrics().state
    for (const state of STATES) this.set({ state }, state === now ? 1 : 0)
  } }))
  add('in_flight', (name) => new client.Gauge({ name, help: 'Work items running now', registers, collect() {
    this.set(metrics().inFlight)
  } }))
  for (const [key, metric, help] of COUNTERS) {
    add(metric, (name) => new client.Counter({ name, help, registers, collect() {
      this.reset()
      this.inc(metrics()[key])
    } }))
  }
  add('drain_seconds', (name) => new client.Gauge({ name, help: 'The drain\'s duration so far, or in all once over; 0 before it', registers, collect() {
    this.set((metrics().drainMs ?? 0) / 1000)
  } }))
  return add('run_duration_seconds', (name) => new client.Histogram({
    name,
    help: 'How long each served work item took',
    buckets: RUN_DURATION_BUCKETS_MS.map((ms) => ms / 1000),
    registers,
  }))
}
