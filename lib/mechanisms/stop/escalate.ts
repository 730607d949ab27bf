/**
 * The escalate and confirm steps: the graceful signal, and after a bounded grace (cut short by the
 * abort signal) the kill signal to whatever remains; then a bounded wait to confirm that it is
 * gone. What is still there after that is a survivor.
 */
import { logEvent } from '../../ground/logger'
import type { StopJournal } from './journal'
import { now } from './journal'
import type { StopOptions } from './options'
import { settle } from './settle'
import type { StopUnit } from './unit'

export interface StopOutcome {
  /** True when the kill signal had to be sent. */
  escalated: boolean
  /** The pids still alive when the stop gave up. */
  survivors: number[]
}

/** Runs both phases over `units`; the first unit's fields name the stop in its closing event. */
export async function stopUnits(units: readonly StopUnit[], o: StopOptions, journal: StopJournal): Promise<StopOutcome> {
  for (const unit of units) unit.phase(o.first, false)
  const outcome: StopOutcome = { escalated: false, survivors: [] }
  if (!(await settle(units, journal.started + o.graceMs, o.abort))) {
    outcome.escalated = true
    // Everyone still alive gets the kill signal, once; the confirm wait is not cut short by the abort.
    for (const unit of units) unit.phase(o.last, true)
    if (!(await settle(units, now() + o.confirmMs))) outcome.survivors = units.flatMap((u) => u.survivors())
  }
  const fields = units[0]!.fields
  if (outcome.survivors.length > 0) logEvent(journal.logger, 'error', 'kill.survivors', { ...fields, survivors: outcome.survivors })
  else logEvent(journal.logger, 'info', 'group.gone', { ...fields, escalated: outcome.escalated, elapsedMs: journal.elapsed() })
  return outcome
}
