/**
 * The settle step: one phase over every unit of the stop. Each sweep sends the phase's signal to
 * members not yet signalled (found anew each time, so a child forked meanwhile gets it too); then
 * the stop waits by event, never by poll, for the exits still pending, until `until` or `stop`.
 */
import { settlesWithinUnlessAborted } from '../../ground/wait'
import { now } from './journal'
import type { StopUnit } from './unit'

/** True once every unit is gone; false at `until`, or as soon as `stop` aborts, with some still there. */
export async function settle(units: readonly StopUnit[], until: number, stop?: AbortSignal): Promise<boolean> {
  for (;;) {
    const pending: Array<Promise<unknown>> = []
    for (const unit of units) pending.push(...(await unit.sweep()))
    if (pending.length === 0) return true
    const remaining = until - now()
    if (remaining <= 0 || stop?.aborted) return false
    await settlesWithinUnlessAborted(Promise.all(pending), remaining, stop)
  }
}
