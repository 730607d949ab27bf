/**
 * One stop of a run's container at a time. A stop that finds one under way (the client's own exit
 * started one, or another stop did) joins it rather than speak to the engine a second time: the
 * joined unit keeps the stop's own bounds. At the end of its grace the stop under way is hurried
 * (the engine's kill, now); at the end of its confirm it reports what is known then, 'uncertain'
 * unless the stop under way has confirmed the container gone; when that stop ends first, its
 * outcome is this one's (it has said what the engine would say).
 */
import { TimeoutError } from '../../ground/errors'
import type { StopJournal } from '../stop/journal'
import type { ContainerOutcome, ContainerRecord } from './stop'
import { ContainerUnit, type ContainerStopUnit, type ContainerUnitOptions } from './unit'

/** The unit of each run's stop under way. */
const underway = new WeakMap<ContainerRecord, ContainerUnit>()

/** The unit of a stop of `record`'s container: a new one, or one that joins the stop under way. */
export function containerUnitFor(record: ContainerRecord, journal: StopJournal, options: ContainerUnitOptions): ContainerStopUnit {
  const current = underway.get(record)
  // A unit whose stop has given up stays listed until its close has cut its calls short (up to
  // CLOSE_WAIT_MS): its word is final, so a new stop starts its own rather than read that word.
  return current && !current.finished ? new JoinedContainerUnit(current, journal) : ownUnit(record, journal, options)
}

/** The unit of the stop under way for `record`, if any (its outcome so far: shutdownAll's cap reads it). */
export function containerUnitUnderway(record: ContainerRecord): ContainerUnit | undefined {
  return underway.get(record)
}

/**
 * What a stop that does not wait for the stop under way says of the container (one that joined it,
 * at its confirm's end; shutdownAll's cap, child.ts): that stop's outcome when it has confirmed the
 * container gone; else uncertain, with `error`, naming every container it has seen.
 */
export function unlessGone(outcome: ContainerOutcome, error: Error): ContainerOutcome {
  return outcome.state === 'gone' ? outcome : { ...outcome, state: 'uncertain', survivors: outcome.ids, error }
}

function ownUnit(record: ContainerRecord, journal: StopJournal, options: ContainerUnitOptions): ContainerUnit {
  const unit: ContainerUnit = new ContainerUnit(record, journal, {
    ...options,
    onDone: (outcome) => {
      if (underway.get(record) === unit) underway.delete(record)
      options.onDone?.(outcome)
    },
  })
  underway.set(record, unit)
  return unit
}

class JoinedContainerUnit implements ContainerStopUnit {
  readonly fields: Readonly<Record<string, unknown>>
  readonly #unit: ContainerUnit
  #final: ContainerOutcome | null = null
  readonly #since = performance.now()

  constructor(
    joined: ContainerUnit,
    private readonly journal: StopJournal,
  ) {
    this.#unit = joined
    this.fields = joined.fields
  }

  phase(_sig: number, force: boolean): void {
    if (force) this.#unit.hurry('a stop that joined it reached the end of its grace')
  }

  /**
   * The unit joined, as its own stop sees it (the same observation in flight, never a second):
   * gone, or what is still awaited; null once its stop has given up on it (its word is this one's).
   */
  sweep(): Promise<Array<Promise<unknown>> | null> {
    return this.#unit.sweep()
  }

  survivors(): string[] {
    return this.#freeze().survivors
  }

  outcome(): ContainerOutcome {
    if (this.#final) return this.#final
    const outcome = this.#unit.outcome()
    if (this.#unit.finished) return outcome
    const ms = Math.round(performance.now() - this.#since)
    return unlessGone(outcome, new TimeoutError(`the ${outcome.engine} container of run ${outcome.runId} was not confirmed gone within this stop's ${ms} ms (another stop of it was under way)`, ms))
  }

  async close(): Promise<void> {
    const outcome = this.#freeze()
    if (outcome.state === 'uncertain') this.journal.degraded(outcome.error)
  }

  /** This stop's last word on the unit it joined. */
  #freeze(): ContainerOutcome {
    return (this.#final ??= this.outcome())
  }
}
