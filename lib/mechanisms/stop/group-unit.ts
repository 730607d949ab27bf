/**
 * The unit of a stop on POSIX: the target's process group with the descendants it adopted, or the
 * process alone when it leads no group (`pgid` null). Its members are listed again each time the
 * known ones are all gone, so children forked meanwhile are found too. Gone when every pinned
 * member has exited (zombies do not count) and a fresh listing finds no one new.
 */
import { GroupMembers } from './group-members'
import { GroupScope } from './group-scope'
import { GroupSignals } from './group-signal'
import { childExit } from '../../ground/wait'
import { now, type StopJournal } from './journal'
import { checkPhase, type PinnedTarget } from './pin'
import type { TargetUnit } from './unit'

export class GroupUnit implements TargetUnit {
  readonly fields: Readonly<{ pid: number; pgid: number | null }>
  private readonly members: GroupMembers
  private readonly signals: GroupSignals
  private readonly scope: GroupScope
  /** The end of the current phase (performance.now() time). */
  private until = Infinity
  /** The wait for our own child's reap, once its exit was seen (reapPending). */
  private reap: { promise: Promise<void>; dispose(): void } | null = null
  private force = false
  /** Whether the current phase has swept once (found the members and signalled them). */
  private swept = false

  constructor(private readonly target: PinnedTarget, readonly pgid: number | null, journal: StopJournal) {
    // A target pinned by pid for want of a handle: the stop could not see everything from the start.
    if (target.pinError) journal.degraded(target.pinError)
    this.fields = { pid: target.pid, pgid }
    const scope = (this.scope = new GroupScope(target, pgid, journal))
    this.members = new GroupMembers(target, scope, journal)
    this.signals = new GroupSignals(target, scope, journal, this.fields)
  }

  phase(sig: number, force: boolean, until: number): void {
    this.signals.phase(sig, force)
    this.until = until
    this.force = force
    this.swept = false
  }

  async sweep(): Promise<Array<Promise<unknown>>> {
    // The kill phase's SIGKILL to the group by its id, before any listing (group-signal.ts); from
    // the check phase, where our child's exitCode says whether libuv has reaped it (pin.ts).
    if (this.signals.groupKillDue()) {
      await checkPhase()
      const live = this.members.live()
      if (live.length > 0 && this.signals.killGroup(live)) return live.map((m) => m.exited)
    }
    // The leader's exit seen (its pidfd), its reap not yet: the reap is a moment away, and spawn.ts
    // looks at the group right then, where one kill(-pgid, 0) proves it empty without a scan of the
    // process table (the listing below then needs none). Waited for within the phase only: at its
    // end, the listing.
    const reap = this.reapPending()
    if (reap) return [reap]
    // The grace is over with a pinned member still running: the kill phase follows at once and
    // finds the members anew. A listing now would only give members forked meanwhile the graceful
    // signal a moment before the kill signal (and cost a scan of the process table).
    if (this.graceOver()) return this.members.live().map((m) => m.exited)
    this.swept = true
    await this.members.refresh()
    // Signals by number (our unpinned child, the group by its id) go from the check phase only (see
    // pin.ts); nothing below awaits before they are sent.
    if (this.signals.byNumber()) await checkPhase()
    const live = this.members.live()
    this.signals.deliver(live)
    return live.map((m) => m.exited)
  }

  /** The graceful phase, swept once already, has ended with some pinned member alive. */
  private graceOver(): boolean {
    return !this.force && this.swept && now() >= this.until && this.members.live().length > 0
  }

  /** Our own child's reap, when its exit has been seen and the phase has time left; else null. */
  private reapPending(): Promise<void> | null {
    const { child, pid } = this.target
    if (child === null || child.exitCode !== null || child.signalCode !== null || !this.scope.ownChildGroup()) return null
    if (!this.members.exited(pid) || now() >= this.until) return null
    this.reap ??= childExit(child)
    return this.reap.promise
  }

  survivors(): number[] {
    return this.members.live().map((m) => m.handle.pid)
  }

  targetGone(): boolean {
    return this.members.exited(this.target.pid)
  }

  close(): void {
    this.reap?.dispose()
    this.signals.ledger.close()
    this.members.close()
  }
}
