/**
 * The signals the stops under way have sent, shared by every stop in this process: a process that
 * one stop has given a signal does not get the same signal again from another stop running at the
 * same time (two killProcessGracefully of one child, say). A second SIGINT or SIGTERM means "force
 * now" to many programs (the reapkit wrapper among them), so it must not be sent by accident.
 *
 * Exact: a signal is skipped only while the other stop's pin on the process is alive, so the pid
 * still names that very process.
 *
 * One index by signal and pid for every stop: a lookup costs the same however many stops run at
 * once (a shutdownAll of thousands of children is that many stops).
 */
import { pinAlive } from './pin'
import type { Pinned } from './types'

/** `${sig}:${pid}` -> the stops that sent it there, each with the pin it went through. */
const sentBy = new Map<string, Map<SignalLedger, Pinned>>()

export class SignalLedger {
  /** This stop's keys in `sentBy`, to remove at close. */
  private readonly keys: string[] = []

  /** `sig` went to the process pinned by `handle`. */
  record(sig: number, handle: Pinned): void {
    const key = `${sig}:${handle.pid}`
    let stops = sentBy.get(key)
    if (!stops) sentBy.set(key, (stops = new Map()))
    if (!stops.has(this)) this.keys.push(key)
    stops.set(this, handle)
  }

  /** Whether another stop under way has sent `sig` to the live process `pid` (through a pin it still holds). */
  sentElsewhere(sig: number, pid: number): boolean {
    const stops = sentBy.get(`${sig}:${pid}`)
    if (!stops) return false
    for (const [ledger, pin] of stops) if (ledger !== this && pinAlive(pin)) return true
    return false
  }

  /** The stop has ended: what it sent no longer speaks for anyone. */
  close(): void {
    for (const key of this.keys.splice(0)) {
      const stops = sentBy.get(key)
      stops?.delete(this)
      if (stops?.size === 0) sentBy.delete(key)
    }
  }
}
