/**
 * A stop of a run's container alone: everything one run put in the engine, ended through the engine
 * and confirmed gone through it (issue 18's contract, the "container" row of DESIGN.md's unit of a
 * stop). It is the same steps as every stop (stop/escalate.ts) over one unit, the container's
 * (unit.ts): the engine's stop with the grace, its kill after it, bounded looks to confirm, and the
 * report: 'gone', 'survived' (with the ids), or 'uncertain' when the engine did not answer (a
 * daemon that cannot be reached is never read as "gone").
 *
 * The whole stop has one deadline, grace + confirm: a hung engine costs no more than that, each
 * call bounded by what is left of it.
 */
import { constants } from 'node:os'
import type { Logger } from '../../ground/logger'
import { runPhases } from '../stop/escalate'
import { StopJournal } from '../stop/journal'
import type { ContainerEngine } from './command'
import type { EngineClient } from './engine'
import { ContainerUnit, type ContainerStopUnit, type ContainerUnitOptions } from './unit'

/** What spawn() recorded of a container run (SpawnedInfo.container). */
export interface ContainerRecord extends EngineClient {
  /** The run's `reapkit.run` label value: the container is found by it. */
  runId: string
  /** The run's `reapkit.owner` label value (owner.ts). */
  owner: string
  /** The run had `--rm`: the container is gone only once removed. */
  autoRemove: boolean
}

/** How the stop of one run's container ended. */
export interface ContainerOutcome {
  engine: ContainerEngine
  runId: string
  /** Every container of the run the stop saw (full ids; empty: none was there). */
  ids: string[]
  /**
   * 'gone': confirmed by the engine (removed with `--rm`, not running without); 'survived': still
   * there at the end of the confirm bound (see `survivors`); 'uncertain': the engine did not answer
   * (see `error`), so nothing is known.
   */
  state: 'gone' | 'survived' | 'uncertain'
  /** Ids not confirmed gone (empty when 'gone'; what was last seen, or `ids`, otherwise). */
  survivors: string[]
  /** True when a container was still running and the engine was told to stop it (removing an exited `--rm` leftover is not stopping). */
  stopped: boolean
  /** The engine's error that left the stop uncertain (or that came with survivors). */
  error?: Error
}

export interface ContainerStopOptions {
  /** The stop's grace, in ms: the engine's stop gets it less a second, in whole seconds (rounded down). */
  graceMs: number
  /** After the stop, how long to look for the containers to be gone. */
  confirmMs: number
  /** Ends the grace at once: the engine's kill (or `rm -f`) now. */
  abortSignal?: AbortSignal
  /** Bound of each engine call that does not wait on a container (less when the stop's deadline is nearer). Default 10000. */
  callTimeoutMs?: number
  /**
   * When the first look finds nothing, look once more after this long before saying 'gone': a
   * client killed in the middle of its create leaves the engine to finish it (a `created`
   * container, removed then). 0 (the default) for a client that exited by itself: it saw its
   * container end.
   */
  settleMs?: number
  logger?: Logger
}

/**
 * A stop of the run's container alone, with a unit of its own (see child.ts for one that joins a
 * stop under way; doctor/containers-stop.ts passes the `ids` of a leaked container). Never rejects.
 */
export function stopContainerRun(record: ContainerRecord, options: ContainerStopOptions & Pick<ContainerUnitOptions, 'ids'>): Promise<ContainerOutcome> {
  const journal = new StopJournal(options.logger)
  return stopContainerUnit(new ContainerUnit(record, journal, options), options, journal)
}

/** The phases over one container unit, from the journal's start; resolves to its outcome once it is closed. */
export async function stopContainerUnit(unit: ContainerStopUnit, options: ContainerStopOptions, journal: StopJournal): Promise<ContainerOutcome> {
  // The container unit does not read the signals: the engine stops with its own (STOPSIGNAL, then SIGKILL).
  const phases = { first: constants.signals.SIGTERM, last: constants.signals.SIGKILL, graceMs: Math.max(0, options.graceMs), confirmMs: Math.max(0, options.confirmMs), abort: options.abortSignal }
  try {
    await runPhases([unit], phases, journal.started)
  } finally {
    await unit.close()
  }
  return unit.outcome()
}
