/**
 * The phases of a stop over its units: the graceful signal, settled within the grace (cut short by
 * the abort signal); then the escalation, the kill signal to whatever remains; then the confirm, a
 * bounded wait for it to be gone. What is still there after that is a survivor.
 */
import { logEvent } from '../../ground/logger'
import { now, type StopJournal } from './journal'
import type { StopOptions } from './options'
import { settle } from './settle'
import type { StopUnit } from './unit'

export interface StopOutcome {
  /** True when the grace ended with members alive, so the kill phase began (see KillGroupResult.escalated). */
  escalated: boolean
  /** The pids still alive when the stop gave up. */
  survivors: number[]
}

/** Runs the phases over `units`, the target's own unit first. */
export async function stopUnits(units: readonly StopUnit[], o: StopOptions, journal: StopJournal): Promise<StopOutcome> {
  for (const unit of units) unit.phase(o.first, false)
  const gone = await settle(units, journal.started + o.graceMs, o.abort)
  return confirm(units, journal, gone ? { escalated: false, survivors: [] } : await escalate(units, o))
}

/** Everyone still alive gets the kill signal, once; the confirm wait is not cut short by the abort. */
async function escalate(units: readonly StopUnit[], o: StopOptions): Promise<StopOutcome> {
  for (const unit of units) unit.phase(o.last, true)
  const gone = await settle(units, now() + o.confirmMs)
  return { escalated: true, survivors: gone ? [] : units.flatMap((u) => u.survivors()) }
}

/**
 * The stop's closing event, named by the target's unit: its survivors, or that it is gone. An
 * uncertain stop says so: "gone" then covers only what it could see, so it is a warning.
 */
function confirm(units: readonly StopUnit[], journal: StopJournal, outcome: StopOutcome): StopOutcome {
  const fields = { ...units[0]!.fields, uncertain: journal.uncertain }
  if (outcome.survivors.length > 0) logEvent(journal.logger, 'error', 'kill.survivors', { ...fields, survivors: outcome.survivors })
  else logEvent(journal.logger, journal.uncertain ? 'warn' : 'info', 'group.gone', { ...fields, escalated: outcome.escalated, elapsedMs: journal.elapsed() })
  return outcome
}
