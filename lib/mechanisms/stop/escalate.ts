/**
 * The phases of a stop over its units: the graceful signal, settled within the grace (cut short by
 * the abort signal); then the escalation, the kill signal to whatever remains; then the confirm, a
 * bounded wait for it to be gone. What is still there after that is a survivor. Every unit goes
 * through them at once, each on its own (unit.ts), under the same grace and confirm bounds.
 */
import { logEvent } from '../../ground/logger'
import { now, type StopJournal } from './journal'
import type { StopOptions } from './options'
import { settle } from './settle'
import { closeUnits, type StopUnit, type Survivor } from './unit'

export interface StopOutcome {
  /** True when the grace ended with members of the target's unit alive, so its kill phase began (see KillGroupResult.escalated). */
  escalated: boolean
  /** The pids still alive when the stop gave up. */
  survivors: number[]
  /** The containers not confirmed gone when the stop gave up, by id. */
  containerSurvivors: string[]
}

/** The bounds and signals of the phases. */
export type PhaseOptions = Pick<StopOptions, 'first' | 'last' | 'graceMs' | 'confirmMs' | 'abort'> & Partial<Pick<StopOptions, 'deadlines'>>

/** How one unit's phases ended. */
interface UnitEnd {
  escalated: boolean
  gone: boolean
}

/**
 * Runs the phases over `units`, the target's own unit first, closes them (always), and logs the
 * stop's closing event: after the close, since a unit may learn there that the stop was uncertain.
 */
export async function stopUnits(units: readonly StopUnit[], o: StopOptions, journal: StopJournal): Promise<StopOutcome> {
  let left: Survivor[]
  let ends: UnitEnd[]
  try {
    ends = await runPhases(units, o, journal.started)
    left = units.flatMap((u, i) => (ends[i]!.gone ? [] : u.survivors()))
  } finally {
    await closeUnits(units)
  }
  const outcome: StopOutcome = {
    escalated: ends[0]!.escalated,
    survivors: left.filter((s): s is number => typeof s === 'number'),
    containerSurvivors: left.filter((s): s is string => typeof s === 'string'),
  }
  return confirm(units, journal, outcome)
}

/** Every unit through its phases at once, from `started` (the stop's start); resolves when each is gone or given up. */
export function runPhases(units: readonly StopUnit[], o: PhaseOptions, started: number): Promise<UnitEnd[]> {
  return Promise.all(units.map((unit) => phases(unit, o, started)))
}

/** Graceful, then (if the grace ends with some of it left) the kill signal; the confirm is not cut short by the abort. */
async function phases(unit: StopUnit, o: PhaseOptions, started: number): Promise<UnitEnd> {
  const graceEnd = started + o.graceMs
  unit.phase(o.first, false, graceEnd)
  if (await settle(unit, graceEnd, o.abort, o.deadlines)) return { escalated: false, gone: true }
  const confirmEnd = now() + o.confirmMs
  unit.phase(o.last, true, confirmEnd)
  return { escalated: true, gone: await settle(unit, confirmEnd, undefined, o.deadlines) }
}

/**
 * The stop's closing event, named by the target's unit: its survivors, or that it is gone. An
 * uncertain stop says so: "gone" then covers only what it could see, so it is a warning.
 */
function confirm(units: readonly StopUnit[], journal: StopJournal, outcome: StopOutcome): StopOutcome {
  const fields = { ...units[0]!.fields, uncertain: journal.uncertain }
  const { survivors, containerSurvivors } = outcome
  if (survivors.length > 0 || containerSurvivors.length > 0) {
    logEvent(journal.logger, 'error', 'kill.survivors', { ...fields, survivors, ...(containerSurvivors.length > 0 ? { containerSurvivors } : {}) })
  } else logEvent(journal.logger, journal.uncertain ? 'warn' : 'info', 'group.gone', { ...fields, escalated: outcome.escalated, elapsedMs: journal.elapsed() })
  return outcome
}
