/**
 * The signal step for a process group: each live member gets the phase's signal once, through its
 * pin. When the group could not be listed or its members pinned (the stop is uncertain), one killpg
 * still reaches them all, but only while our own child leads the group unreaped: its pid then holds
 * the group id (spawn.ts). A process another stop under way has given the same signal is not given
 * it again (signal-ledger.ts).
 *
 * The kill phase's SIGKILL goes to such a group by its id first, before any listing (killGroup()):
 * a listing is a scan of the whole process table, and a shutdown of thousands of children that
 * waited for one to send each SIGKILL spread the kills, and so the exits, over seconds
 * (bench/exitscale.mjs shutdown). The listings after it only confirm.
 */
import { nativeBinding } from '../../ground/native'
import { signalName } from '../../ground/validate'
import { ProcessHandle } from '../handle'
import type { Member } from './group-members'
import type { GroupScope } from './group-scope'
import type { StopJournal } from './journal'
import type { PinnedTarget } from './pin'
import { SignalLedger } from './signal-ledger'
import type { Pinned } from './types'

const SIGKILL = 9

export class GroupSignals {
  /** What this stop sent, for the other stops under way (signal-ledger.ts). */
  readonly ledger = new SignalLedger()
  private sig = 0
  private sentTo = new Set<Pinned>() // who got the current phase's signal
  private groupSignalled = false
  private force = false

  constructor(
    private readonly target: PinnedTarget,
    private readonly scope: GroupScope,
    private readonly journal: StopJournal,
    private readonly fields: object,
  ) {}

  /** A new phase: everyone still alive gets `sig`, once. `force`: the kill phase. */
  phase(sig: number, force = false): void {
    this.sig = sig
    this.force = force
    this.sentTo = new Set()
    this.groupSignalled = false
  }

  /**
   * Whether this phase's signal may go to the whole group by its id before any listing: the kill
   * phase's SIGKILL (a second one changes nothing for a member that also gets it through its pin;
   * a second SIGTERM or SIGINT would mean "force now" to many programs), not sent yet, to the group
   * spawn() made for our own child. Asked before the check phase; killGroup() decides from there.
   */
  groupKillDue(): boolean {
    return this.force && this.sig === SIGKILL && !this.groupSignalled && this.scope.ownChildGroup() && nativeBinding() !== null
  }

  /**
   * SIGKILL to the whole group by its id, from the check phase (pin.ts): while our own child leads
   * the group unreaped, its pid holds the id (spawn.ts), so whatever is in the group is its group's,
   * members forked since the last listing included. A pinned member that left the group gets it
   * through its pin. `live` are the pinned members; the SignalSent counts those it reached (as a
   * listing's would: the listing that confirms counts any new member it finds, and sends it SIGKILL
   * through its pin as well). False when it was not sent (then the usual listing and pins follow).
   */
  killGroup(live: Member[]): boolean {
    const { child, pid } = this.target
    if (!this.groupKillDue() || child === null || child.exitCode !== null || child.signalCode !== null) return false
    this.groupSignalled = true
    try {
      nativeBinding()!.killpg(pid, SIGKILL)
    } catch {
      return false // ESRCH: nobody left in it (a zombie leader alone); the listing says so
    }
    let reached = 0
    const missed: Member[] = []
    for (const m of live) {
      if (!this.scope.has(m.handle.pid)) {
        missed.push(m)
        continue
      }
      this.sentTo.add(m.handle)
      this.ledger.record(SIGKILL, m.handle)
      reached++
    }
    this.journal.sent(this.fields, { signal: 'SIGKILL', atMs: this.journal.elapsed(), processes: Math.max(1, reached) })
    if (missed.length > 0) {
      this.send(SIGKILL, missed)
      for (const m of missed) this.sentTo.add(m.handle)
    }
    return true
  }

  /** Whether a signal may go by number (our unpinned child, the group by its id): only from the check phase, then. */
  byNumber(): boolean {
    const { leader } = this.target
    return this.journal.groupUncertain || (leader !== null && !(leader instanceof ProcessHandle))
  }

  /** Sends the phase's signal to each of `live` that has not had it. */
  deliver(live: Member[]): void {
    const sig = this.sig
    let fresh: Member[] = []
    for (const m of live) {
      if (this.sentTo.has(m.handle)) continue
      // One that another stop under way has given this very signal is not given it twice.
      if (this.ledger.sentElsewhere(sig, m.handle.pid)) this.sentTo.add(m.handle)
      else fresh.push(m)
    }
    // The group's one killpg reaches every member still in the group: sending those the signal
    // through their pins as well would give it to them twice (and a second SIGINT means "force"
    // to many programs, the reapkit wrapper among them). So they get it from the killpg alone.
    const viaGroup: Member[] = []
    if (this.groupByNumberDue()) {
      const rest: Member[] = []
      for (const m of fresh) (this.scope.has(m.handle.pid) ? viaGroup : rest).push(m)
      fresh = rest
    }
    if (fresh.length > 0) {
      this.send(sig, fresh)
      for (const m of fresh) this.sentTo.add(m.handle)
    }
    // After the pinned ones, so they are counted as such.
    if (this.signalGroupByNumber(sig, viaGroup.length)) {
      // One that left the group before the killpg did not get it: through its pin, then.
      const missed = viaGroup.filter((m) => !this.scope.has(m.handle.pid))
      if (missed.length > 0) this.send(sig, missed)
    } else if (viaGroup.length > 0) {
      this.send(sig, viaGroup)
    }
    for (const m of viaGroup) this.sentTo.add(m.handle)
  }

  /** `sig` through each member's pin; one SignalSent for those it reached. */
  private send(sig: number, members: Member[]): void {
    let count = 0
    for (const m of members) {
      try {
        m.handle.signal(sig)
        this.ledger.record(sig, m.handle)
        count++
      } catch {
        // ESRCH: it exited in the meantime; its exit event marks it gone
      }
    }
    if (count > 0) this.journal.sent(this.fields, { signal: signalName(sig)!, atMs: this.journal.elapsed(), processes: count })
  }

  private groupByNumberDue(): boolean {
    const { pid, child } = this.target
    const pgid = this.scope.pgid
    return !this.groupSignalled && this.journal.groupUncertain && pgid !== null && pgid === pid && nativeBinding() !== null &&
      child != null && child.exitCode === null && child.signalCode === null
  }

  /** One killpg; true when it was sent. */
  private signalGroupByNumber(sig: number, pinnedMembers: number): boolean {
    if (!this.groupByNumberDue()) return false
    this.groupSignalled = true
    try {
      nativeBinding()!.killpg(this.scope.pgid!, sig)
    } catch {
      return false // ESRCH: the group is gone
    }
    const sent = { signal: signalName(sig)!, atMs: this.journal.elapsed(), processes: Math.max(1, pinnedMembers), group: true }
    this.journal.sent(this.fields, sent, 'warn', { reason: String(this.journal.error) })
    return true
  }
}
