/**
 * The settle step: one phase of one unit. Each sweep sends the phase's signal to members not yet
 * signalled (found anew each time, so a child forked meanwhile gets it too); then the stop waits
 * by event (a pidfd, a job's exit, an engine's answer), never by a timer of its own, for what is
 * still pending, until `until` or `stop`.
 */
import { type Deadlines, ownTimers } from './deadlines'
import { now } from './journal'
import type { StopUnit } from './unit'

/** True once the unit is gone; false at `until`, or as soon as `stop` aborts (or the unit gives up), with some of it still there. */
export async function settle(unit: StopUnit, until: number, stop?: AbortSignal, deadlines: Deadlines = ownTimers): Promise<boolean> {
  for (;;) {
    const pending = await unit.sweep()
    if (pending === null) return false
    if (pending.length === 0) return true
    const remaining = until - now()
    if (remaining <= 0 || stop?.aborted) return false
    await deadlines.settlesBy(Promise.all(pending), until, stop)
  }
}
