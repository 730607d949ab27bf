/**
 * What the container unit (unit.ts) asks the engine to find out: the run's containers, by its
 * `reapkit.run` label, and what keeps the run from being gone. Every call is bounded and cut short
 * by the unit's close; an error is the engine not answering, never "gone".
 */
import { RUN_LABEL } from './command'
import { type CallOptions, containerStatus, killContainers, listByLabel, listRun, removeContainers } from './engine'
import type { ContainerRecord } from './stop'

/** The states in which a container still runs (its processes are there to be ended). */
const RUNNING = new Set(['running', 'paused', 'restarting'])

/** One look at the run: every container it has, and those running. */
export interface Look {
  all: string[]
  running: string[]
}

/** Resolve: the run's containers (all of them, and those running). */
export async function look(record: ContainerRecord, call: CallOptions): Promise<Look> {
  // Both calls settle before the look does: a look never leaves an engine call running.
  const [all, running] = await Promise.allSettled([listRun(record, record.runId, call), listRun(record, record.runId, { ...call, all: false })])
  if (all.status === 'rejected') throw all.reason
  if (running.status === 'rejected') throw running.reason
  return { all: all.value, running: running.value }
}

/**
 * A look at containers already known, by id: one engine call each (`inspect`) rather than two
 * listings, so that many stops at once do not crowd the engine (podman's client is heavy). The
 * same answer as a listing of the run: a container the engine no longer has is not listed;
 * 'stopping' (podman) is not running, as `ps` has it. 'paused' and 'restarting' are running, as
 * docker's `ps` has them: a frozen container is not ended (a paused leaked container doctor stops
 * is first looked at by id, and was reported gone with its processes still there).
 */
export async function lookKnown(record: ContainerRecord, ids: readonly string[], call: CallOptions): Promise<Look> {
  const states = await Promise.allSettled(ids.map((id) => containerStatus(record, id, call.timeoutMs, call.signal)))
  const failed = states.find((s) => s.status === 'rejected')
  if (failed) throw (failed as PromiseRejectedResult).reason
  const status = (i: number): string => (states[i] as PromiseFulfilledResult<string>).value
  return { all: ids.filter((_, i) => status(i) !== 'gone'), running: ids.filter((_, i) => RUNNING.has(status(i))) }
}

/** What still keeps the run from being gone: with `--rm`, anything listed; without, anything running. */
export const remaining = (record: ContainerRecord, seen: Look): string[] => (record.autoRemove ? seen.all : seen.running)

/**
 * A second look found the run's container after a first one found nothing: a client killed in the
 * middle of its create leaves the engine to finish it. One left `created` (never started) is
 * removed at once (`rm -f` of a container that never ran ends nothing); the look, without it.
 */
export async function removeCreated(record: ContainerRecord, seen: Look, call: () => CallOptions): Promise<{ seen: Look; created: string[] }> {
  const created = await listByLabel(record, `${RUN_LABEL}=${record.runId}`, { ...call(), status: 'created' }).catch((): string[] => [])
  if (created.length === 0) return { seen, created }
  await removeContainers(record, created, call().timeoutMs, call().signal).catch(() => {}) // the next looks judge
  return { seen: record.autoRemove ? seen : { all: seen.all, running: seen.running.filter((id) => !created.includes(id)) }, created }
}

/**
 * With --rm, a leftover that is not running on two looks in a row (docker removes its own a moment
 * after the exit; podman's cleanup may have died with its client; one never started) is removed:
 * killed first, since podman 4 lists a container a dead stop left 'stopping' as not running, and
 * its `rm -f` would drop the record and leave the processes. `tally` counts the looks per id.
 */
export async function removeLeftovers(record: ContainerRecord, seen: Look, tally: Map<string, number>, call: () => CallOptions): Promise<void> {
  const leftovers: string[] = []
  for (const id of seen.all) {
    if (seen.running.includes(id)) continue
    const looks = (tally.get(id) ?? 0) + 1
    tally.set(id, looks)
    if (looks === 2) leftovers.push(id)
  }
  if (leftovers.length === 0) return
  await killContainers(record, leftovers, call().timeoutMs, call().signal).catch(() => {}) // "not running": as expected
  await removeContainers(record, leftovers, call().timeoutMs, call().signal).catch(() => {}) // the engine may be removing it already: the looks judge
}
