/**
 * The signals the stops under way have sent, shared by every stop in this process: a process that
 * one stop has given a signal does not get the same signal again from another stop running at the
 * same time (two killProcessGracefully of one child, say). A second SIGINT or SIGTERM means "force
 * now" to many programs (the reapkit wrapper among them), so it must not be sent by accident.
 *
 * Exact: a signal is skipped only while the other stop's pin on the process is alive, so the pid
 * still names that very process.
 */
import { pinAlive } from './pin'
import type { Pinned } from './types'

const underway = new Set<SignalLedger>()

export class SignalLedger {
  /** The pins each signal was sent through, by signal number. */
  private readonly sent = new Map<number, Pinned[]>()

  constructor() {
    underway.add(this)
  }

  /** `sig` went to the process pinned by `handle`. */
  record(sig: number, handle: Pinned): void {
    const pins = this.sent.get(sig)
    if (pins) pins.push(handle)
    else this.sent.set(sig, [handle])
  }

  /** Whether another stop under way has sent `sig` to the live process `pid` (through a pin it still holds). */
  sentElsewhere(sig: number, pid: number): boolean {
    for (const ledger of underway) {
      if (ledger === this) continue
      for (const pin of ledger.sent.get(sig) ?? []) if (pin.pid === pid && pinAlive(pin)) return true
    }
    return false
  }

  /** The stop has ended: what it sent no longer speaks for anyone. */
  close(): void {
    underway.delete(this)
  }
}
