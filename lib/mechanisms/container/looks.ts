/**
 * What the container unit (unit.ts) asks the engine to find out: the run's containers, by its
 * `reapkit.run` label, and what keeps the run from being gone. Every call is bounded and cut short
 * by the unit's close; an error is the engine not answering, never "gone".
 */
import { type CallOptions, containerStatus, listRun, removeContainers } from './engine'
import type { ContainerRecord } from './stop'

/**
 * One look at the run: every container it has, those not at rest (running, or on the way to rest),
 * and those never started (a subset of the ones at rest: see atRestTwice).
 */
export interface Look {
  all: string[]
  running: string[]
  unstarted: string[]
}

/**
 * The states in which a container's processes are gone: docker's exited, created, dead; podman's
 * exited, stopped (exited, its cleanup pending), created, configured, initialized (never started).
 * Any other state is not at rest: running, paused, restarting, removing (docker), and podman's
 * 'stopping', which `ps` lists as not running while PID 1 still runs (a stop in flight, or one whose
 * client was killed). An unknown state is not at rest either: the stop never calls it gone.
 */
const AT_REST = new Set(['exited', 'stopped', 'created', 'configured', 'initialized', 'dead'])
/**
 * Of those, the states of a container never started: `run` is a create, then a start, and a start
 * may be on its way (the client sent it, or is about to) when a look finds one: at rest only when
 * two looks in a row find it so (atRestTwice).
 */
const UNSTARTED = new Set(['created', 'configured', 'initialized'])

/** Whether an `inspect` state is one in which the container's processes are gone. */
export const atRest = (status: string): boolean => AT_REST.has(status.toLowerCase())

/**
 * Resolve: the run's containers (listed by label), then each one's state (`inspect`): `ps` without
 * `-a` leaves out a podman container that is 'stopping', whose PID 1 may run on.
 */
export async function look(record: ContainerRecord, call: CallOptions): Promise<Look> {
  const all = await listRun(record, record.runId, call)
  return all.length === 0 ? { all, running: [], unstarted: [] } : lookKnown(record, all, call)
}

/**
 * A look at containers already known, by id: one engine call each (`inspect`) rather than a
 * listing, so that many stops at once do not crowd the engine (podman's client is heavy). A
 * container the engine no longer has is not listed; one not at rest (see AT_REST) is 'running'.
 */
export async function lookKnown(record: ContainerRecord, ids: readonly string[], call: CallOptions): Promise<Look> {
  const states = await Promise.allSettled(ids.map((id) => containerStatus(record, id, call.timeoutMs, call.signal)))
  const failed = states.find((s) => s.status === 'rejected')
  if (failed) throw (failed as PromiseRejectedResult).reason
  const found = ids.map((id, i) => ({ id, status: (states[i] as PromiseFulfilledResult<string>).value })).filter((c) => c.status !== 'gone')
  const idsOf = (keep: (status: string) => boolean): string[] => found.filter((c) => keep(c.status)).map((c) => c.id)
  return { all: idsOf(() => true), running: idsOf((s) => !atRest(s)), unstarted: idsOf((s) => UNSTARTED.has(s.toLowerCase())) }
}

/**
 * Counts, per container, the looks in a row that found it at rest (`tally`, kept by the unit): a
 * look that finds it running starts it over. What decides that a never-started container is at rest
 * (remaining) and that a --rm leftover is removed (removeLeftovers).
 */
export function tallyAtRest(seen: Look, tally: Map<string, number>): void {
  for (const id of seen.all) {
    if (seen.running.includes(id)) tally.delete(id) // two looks in a row at rest, not two looks in all
    else tally.set(id, (tally.get(id) ?? 0) + 1)
  }
}

/** Whether `id`, at rest on this look, was so on the one before too. */
const atRestTwice = (id: string, tally: ReadonlyMap<string, number>): boolean => (tally.get(id) ?? 0) >= 2

/**
 * What still keeps the run from being gone: with `--rm`, anything listed; without, anything running,
 * and a container never started that only this look found so (its start may be on its way).
 */
export const remaining = (record: ContainerRecord, seen: Look, tally: ReadonlyMap<string, number>): string[] =>
  record.autoRemove ? seen.all : [...seen.running, ...seen.unstarted.filter((id) => !atRestTwice(id, tally))]

/**
 * A second look (`seen`) found the run's container after a first one found nothing: a client killed
 * in the middle of its create leaves the engine to finish it. One never started (the look has its
 * state: no listing is needed) is removed at once (`rm -f` of a container that never ran ends
 * nothing); the next look confirms it gone (until then it is not at rest: seen once, its start may
 * be on its way). Returns those ids.
 */
export async function removeCreated(record: ContainerRecord, seen: Look, call: () => CallOptions): Promise<string[]> {
  const created = seen.unstarted
  if (created.length === 0) return created
  const { timeoutMs, signal } = call()
  await removeContainers(record, created, timeoutMs, signal).catch(() => {}) // the next looks judge
  return created
}

/**
 * With --rm, a leftover at rest on two looks in a row (docker removes its own a moment after the
 * exit; podman's cleanup may have died with its client; one never started) is removed, once (on the
 * second such look). Only a container at rest (see AT_REST): podman 4's `rm -f` of one 'stopping'
 * drops the record and leaves its conmon and PID 1 running, unlisted. `tally`: see tallyAtRest.
 */
export async function removeLeftovers(record: ContainerRecord, seen: Look, tally: ReadonlyMap<string, number>, call: () => CallOptions): Promise<void> {
  const leftovers = seen.all.filter((id) => tally.get(id) === 2)
  if (leftovers.length === 0) return
  const { timeoutMs, signal } = call()
  await removeContainers(record, leftovers, timeoutMs, signal).catch(() => {}) // the engine may be removing it already: the looks judge
}
