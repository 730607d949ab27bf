/**
 * A spawned container client and its container: what spawn() does to a recognized run (labels it
 * and records it), and the container's part in the stop paths that hold the child.
 *
 * - spawn(): `prepareContainerRun` rewrites the run's args and builds its record
 *   (SpawnedInfo.container);
 * - this process's 'exit' (process.exit, an uncaught exception): exit-backstop.ts kills, synchronously,
 *   what still runs under this process's owner label; a record stays in its watch while its client
 *   runs and until a stop has confirmed its container gone;
 * - the client's own exit (`attachContainer`): when the docker/podman client ends while its
 *   container still runs (it was SIGKILLed, say), the container is stopped through the engine,
 *   bounded, with the kill grace: nothing the client started outlives it;
 * - killProcessGracefully (so closeClient's forced phase, Supervisor.terminate and shutdownAll, and
 *   the stdio transport's close): `containerUnitsOf` gives the stop its container's unit
 *   (unit.ts), which goes through the same steps as the client's group, under the same deadline;
 *   closeClient, when the client left in its graceful phase, stops the container alone
 *   (`stopContainersOf`), the same steps over that one unit.
 * One stop runs per record at a time: a stop that finds one under way joins it (joined-unit.ts).
 */
import type { ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { isAbsolute, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { KILL_CONFIRM_MS_DEFAULT, killGraceMs } from '../../ground/config'
import { TimeoutError } from '../../ground/errors'
import type { Logger } from '../../ground/logger'
import { labelledRunArgs, parseContainerRun } from './command'
import { releaseLiveContainer, trackLiveContainer } from './exit-backstop'
import { formatOwner, ownerOf } from './owner'
import { StopJournal } from '../stop/journal'
import { containerUnitFor, containerUnitUnderway, unlessGone } from './joined-unit'
import { type ContainerOutcome, type ContainerRecord, type ContainerStopOptions, stopContainerUnit } from './stop'
import type { ContainerStopUnit, ContainerUnitOptions } from './unit'

/** The container fields of a stop's result (KillResult, CloseReport). */
export interface ContainerResult {
  /** The container step's outcome for each container run of the target (empty when it has none). */
  containers: ContainerOutcome[]
  /** Ids of containers not confirmed gone: survivors, and those an unanswering engine left unknown. */
  containerSurvivors: string[]
}

/** The record of each spawned client (also on its SpawnedInfo, spawn.ts, which this module cannot import). */
const records = new WeakMap<ChildProcess, ContainerRecord>()

/** The container record of a child spawn() started as a container client, or undefined. */
export function containerOf(child: ChildProcess): ContainerRecord | undefined {
  return records.get(child)
}

/**
 * For spawn(): when `command args` is a container run, the args with reapkit's labels and the
 * run's record; else null (a plain command). `env` and `cwd` are the client's, as spawn passes them.
 */
export function prepareContainerRun(
  command: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv | undefined; cwd?: string | URL | undefined },
): { args: string[]; record: ContainerRecord } | null {
  // Arguments of the wrong type are Node's spawn's to refuse, with its own error.
  if (!args.every((a) => typeof a === 'string')) return null
  const run = parseContainerRun(command, args)
  if (run === null) return null
  const runId = randomUUID()
  const owner = formatOwner(ownerOf())
  // Absolute, as at spawn time: the engine is spoken to from there whatever process.chdir() comes later.
  const cwd = resolve(options.cwd === undefined ? process.cwd() : typeof options.cwd === 'string' ? options.cwd : fileURLToPath(options.cwd))
  const record: ContainerRecord = {
    engine: run.engine,
    bin: absoluteBin(run.bin, cwd),
    globals: run.globals,
    // A copy: the engine is spoken to with the environment the client got, whatever changes later.
    env: { ...(options.env ?? process.env) },
    cwd,
    runId,
    owner,
    autoRemove: run.autoRemove,
  }
  return { args: labelledRunArgs(args, run, { runId, owner }), record }
}

/**
 * A program path with a directory in it (`./bin/docker`) is found from the client's working
 * directory: the same one, made absolute. A bare name is looked up on PATH, as spawn did.
 */
function absoluteBin(bin: string, cwd: string): string {
  const hasDir = bin.includes('/') || (process.platform === 'win32' && bin.includes('\\'))
  return hasDir && !isAbsolute(bin) ? resolve(cwd, bin) : bin
}

/** Records whose client has not exited yet. */
const clientRunning = new WeakSet<ContainerRecord>()
/** Records whose container a stop has seen: a later stop needs no second look for a late create. */
const seenOnce = new WeakSet<ContainerRecord>()

/**
 * The container unit of a stop of `record` (joined-unit.ts: it joins the stop under way, if any).
 * The exit backstop keeps watching the record until a stop has confirmed it gone: this process may
 * exit (a host's `child.on('exit', () => process.exit(1))`) while it runs.
 */
function recordUnit(record: ContainerRecord, journal: StopJournal, options: ContainerUnitOptions): ContainerStopUnit {
  trackLiveContainer(record)
  return containerUnitFor(record, journal, {
    ...options,
    settleMs: seenOnce.has(record) ? 0 : (options.settleMs ?? 0),
    onDone: (outcome) => {
      if (outcome.ids.length > 0) seenOnce.add(record)
      if (outcome.state === 'gone' && !clientRunning.has(record)) releaseLiveContainer(record)
    },
  })
}

/**
 * A stop of `record`'s container alone, through the same steps as every stop, over its unit. A
 * stop that finds one under way joins it and keeps its own bounds: at the end of its grace (or
 * when its abortSignal fires) the engine is told to kill; at the end of its confirm it reports.
 */
export function stopRecordedContainer(record: ContainerRecord, options: ContainerStopOptions): Promise<ContainerOutcome> {
  const journal = new StopJournal(options.logger)
  return stopContainerUnit(recordUnit(record, journal, options), options, journal)
}

/**
 * Records `child` as the client of `record`'s run, and watches the client's own exit: once it has
 * exited, its container must not run on. A client that exited because its container did costs one
 * look at the engine; one that was killed gets the engine's stop with the kill grace
 * (REAPKIT_KILL_GRACE_MS). A container left running (or an engine that did not answer) is reported
 * as a process warning, since no caller is there to read an outcome.
 */
export function attachContainer(child: ChildProcess, record: ContainerRecord): void {
  records.set(child, record)
  clientRunning.add(record)
  trackLiveContainer(record) // this process's exit: exit-backstop.ts
  child.once('exit', (_code, signal) => {
    clientRunning.delete(record)
    // Released by the step, once it has confirmed the container gone (not before: see stopRecordedContainer).
    void stopOnClientExit(record, signal !== null)
  })
}

/**
 * How long a step waits for a second look when the first finds nothing, for a client that may have
 * died in the middle of its create (killed, or still running: the stop is about to end it).
 */
export const SETTLE_MS = 1500

/** The client-exit step: the container step with the kill grace, its trouble told as a warning. */
async function stopOnClientExit(record: ContainerRecord, killed: boolean): Promise<void> {
  const outcome = await stopRecordedContainer(record, { graceMs: killGraceMs(), confirmMs: KILL_CONFIRM_MS_DEFAULT, settleMs: killed ? SETTLE_MS : 0 })
  if (outcome.state === 'gone') return
  process.emitWarning(
    `reapkit: the ${record.engine} container of run ${record.runId} is ${outcome.state} after its client exited` +
      `${outcome.survivors.length > 0 ? ` (${outcome.survivors.join(', ')})` : ''}${outcome.error ? `: ${outcome.error.message}` : ''}`,
    { code: 'REAPKIT_CONTAINER_LEFT' },
  )
}

/**
 * The units a stop of `child` runs beside its own (stop/kill.ts): its container's, for a container
 * client spawn() started; none for any other command.
 */
export function containerUnitsOf(child: ChildProcess | null, journal: StopJournal, options: { confirmMs: number; logger?: Logger | undefined }): ContainerStopUnit[] {
  const record = child ? records.get(child) : undefined
  if (!record) return []
  // A client that exited by itself saw its container end; one still running (or killed) may be mid-create.
  const settleMs = child!.exitCode === null ? SETTLE_MS : 0
  return [recordUnit(record, journal, { confirmMs: options.confirmMs, settleMs, logger: options.logger })]
}

/** A stop of `child`'s container alone (its client is gone: closeClient's graceful phase); resolves to [] when it has none. */
export async function stopContainersOf(child: ChildProcess, options: { graceMs: number; confirmMs: number; logger?: Logger | undefined }): Promise<ContainerOutcome[]> {
  const journal = new StopJournal(options.logger)
  const units = containerUnitsOf(child, journal, options)
  return Promise.all(units.map((unit) => stopContainerUnit(unit, options, journal)))
}

/** `result` with the container outcomes merged in: a container not confirmed gone is never a success. */
export function withContainers<T extends { uncertain: boolean; error: Error | null }>(result: T, outcomes: ContainerOutcome[]): T & ContainerResult {
  const uncertain = outcomes.find((o) => o.state === 'uncertain')
  return {
    ...result,
    containers: outcomes,
    containerSurvivors: outcomes.flatMap((o) => (o.state === 'gone' ? [] : o.survivors)),
    uncertain: result.uncertain || uncertain !== undefined,
    error: result.error ?? uncertain?.error ?? null,
  }
}

/**
 * What a derived stop cap (shutdownAll's) adds for the container clients among `children`: each
 * container's stop runs a handful of engine client invocations (list, stop, list again), and many
 * at once queue for the cores (podman's client is heavy), as the processes' own stops queue for the
 * event loop.
 */
export function containerCapSlackMs(children: Iterable<ChildProcess>): number {
  let n = 0
  for (const child of children) if (records.has(child)) n++
  return n * CONTAINER_CAP_SLACK_MS
}
const CONTAINER_CAP_SLACK_MS = 250

/**
 * For a report made without waiting for the stop (shutdownAll's cap ran out): its container, if it
 * has one, is not known to be gone; what the stop under way has seen of it is named.
 */
export function containersAtCap(child: ChildProcess, capMs: number): ContainerResult & { uncertain: boolean; error: Error | null } {
  const record = records.get(child)
  return withContainers({ uncertain: false, error: null }, record ? [outcomeAtCap(record, capMs)] : [])
}

/** The outcome of `record`'s container at the cap: 'gone' when the stop under way has confirmed it, else uncertain, with what it saw. */
function outcomeAtCap(record: ContainerRecord, capMs: number): ContainerOutcome {
  const known = containerUnitUnderway(record)?.outcome() ?? { engine: record.engine, runId: record.runId, ids: [], state: 'uncertain', survivors: [], stopped: true }
  return unlessGone(known, new TimeoutError(`the ${record.engine} container of run ${record.runId} was not confirmed gone within the ${capMs} ms cap`, capMs))
}
