/**
 * stopLeakedContainers(): ends the containers findLeakedContainers() listed as leaked, each by its
 * id through its own engine (the client's environment for a client's container). Each is the same
 * stop as the library's own (issue 18's contract): a container unit (mechanisms/container/unit.ts)
 * built from the leaked container's id, run through the same steps as every stop
 * (stopContainerRun, stop/escalate.ts), under one deadline, grace + confirm:
 *
 *   signal    the engine's stop with what is left of the grace (`stop -t`: STOPSIGNAL, then its SIGKILL);
 *   escalate  at the grace's end, the engine's kill of what still runs; with `--rm`, an exited
 *             leftover is killed then removed;
 *   confirm   bounded looks by id: with `--rm`, gone once the engine has no such container; without,
 *             once it no longer runs (the stopped container stays, as its owner asked);
 *   report    'gone', 'survived', or 'uncertain' when the engine did not answer (never "gone").
 *
 * Every engine call is bounded by what is left of that deadline, and cut short at its end: a hung
 * engine costs no more than grace + confirm (and the close's short wait for the calls it cut).
 *
 * `foreign` containers (another host's owner, another PID namespace's) are never passed here by the
 * CLI, and never taken from a report: only `leaked` is read. Which containers are leaked is
 * doctor/containers.ts's judgement, not this module's.
 */
import { typeError } from '../../ground/errors'
import { validateMs, validateOptions } from '../../ground/validate'
import type { ContainerEngine } from '../../mechanisms/container/command'
import { formatOwner } from '../../mechanisms/container/owner'
import { type ContainerOutcome, type ContainerRecord, stopContainerRun } from '../../mechanisms/container/stop'
import { type ContainerReport, engineClientOf, type LeakedContainer } from './containers'

export interface StopContainersOptions {
  /** The stop's grace: the engine's stop gets what is left of it less a second, in whole seconds (rounded down). Default 5000. */
  graceMs?: number
  /** After the grace, how long to look for the container to be gone. Default 10000. */
  confirmMs?: number
}

export interface StoppedContainer {
  engine: ContainerEngine
  id: string
  name: string
  /** Stopped through another user's endpoint, as that user (LeakedContainer.asUser): its state is what that endpoint said. */
  asUser?: number
  /** 'gone': confirmed by the engine; 'survived': still there at the end; 'uncertain': the engine did not answer. */
  state: 'gone' | 'survived' | 'uncertain'
  /** The engine's error behind 'uncertain' or 'survived'. */
  error?: string
}

interface Bounds {
  graceMs: number
  confirmMs: number
}

function checkOptions(options: StopContainersOptions): Bounds {
  options = validateOptions(options)
  return { graceMs: validateMs(options.graceMs, 'graceMs') ?? 5000, confirmMs: validateMs(options.confirmMs, 'confirmMs') ?? 10_000 }
}

/**
 * The record a container unit stops, for a leaked container: its engine client, and what its labels
 * say. It has no spawn record and may have no `reapkit.run` label (found by --cidfile or conmon):
 * the unit is given its id and never looks by the label.
 */
function recordOf(c: LeakedContainer): ContainerRecord | null {
  const found = engineClientOf(c)
  // One found as another user (a copy of a report: JSON, a spread) is never stopped with our own rights.
  if (found === undefined && c.asUser !== undefined) return null
  const client = found ?? { engine: c.engine, bin: c.engine, globals: [], env: process.env }
  return { ...client, runId: c.runId ?? '', owner: c.owner ? formatOwner(c.owner) : '', autoRemove: c.autoRemove }
}

/** The unit's outcome in doctor's words (its --json `stoppedContainers[]`). */
function reportOf(c: LeakedContainer, outcome: Pick<ContainerOutcome, 'state' | 'error'>): StoppedContainer {
  const base = { engine: c.engine, id: c.id, name: c.name, ...(c.asUser !== undefined ? { asUser: c.asUser } : {}), state: outcome.state }
  return outcome.state !== 'gone' && outcome.error ? { ...base, error: outcome.error.message } : base
}

async function stopOne(c: LeakedContainer, bounds: Bounds): Promise<StoppedContainer> {
  const record = recordOf(c)
  if (record === null) {
    return reportOf(c, { state: 'uncertain', error: new Error(`found as uid ${c.asUser}, and this is not the report that found it (a copy): not stopped with doctor's own rights`) })
  }
  return reportOf(c, await stopContainerRun(record, { ...bounds, ids: [c.id] }))
}

/** Stops one leaked container (findLeakedContainers().leaked[i]). Never rejects once the options are read: the result says what is known. */
export async function stopLeakedContainer(c: LeakedContainer, options: StopContainersOptions = {}): Promise<StoppedContainer> {
  const bounds = checkOptions(options)
  if (typeof c?.id !== 'string' || typeof c.engine !== 'string') throw typeError('ERR_INVALID_ARG_TYPE', 'stopLeakedContainer() takes a container of a findLeakedContainers() report')
  return stopOne(c, bounds)
}

/** Stops every leaked container of a report, all at once; one result each. `foreign` is never touched. */
export async function stopLeakedContainers(report: Pick<ContainerReport, 'leaked'>, options: StopContainersOptions = {}): Promise<StoppedContainer[]> {
  const bounds = checkOptions(options)
  if (!Array.isArray(report?.leaked)) throw typeError('ERR_INVALID_ARG_TYPE', 'stopLeakedContainers() takes a findLeakedContainers() report')
  return Promise.all(report.leaked.map((c) => stopOne(c, bounds)))
}
