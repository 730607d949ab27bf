/**
 * The unit of a stop on POSIX: the target's process group with the descendants it adopted, or the
 * process alone when it leads no group (`pgid` null). Its members are listed again each time the
 * known ones are all gone, so children forked meanwhile are found too. Gone when every pinned
 * member has exited (zombies do not count) and a fresh listing finds no one new.
 */
import { GroupMembers } from './group-members'
import { GroupScope } from './group-scope'
import { GroupSignals } from './group-signal'
import type { StopJournal } from './journal'
import { checkPhase, type PinnedTarget } from './pin'
import type { TargetUnit } from './unit'

export class GroupUnit implements TargetUnit {
  readonly fields: Readonly<{ pid: number; pgid: number | null }>
  private readonly members: GroupMembers
  private readonly signals: GroupSignals

  constructor(private readonly target: PinnedTarget, readonly pgid: number | null, journal: StopJournal) {
    // A target pinned by pid for want of a handle: the stop could not see everything from the start.
    if (target.pinError) journal.degraded(target.pinError)
    this.fields = { pid: target.pid, pgid }
    const scope = new GroupScope(target, pgid, journal)
    this.members = new GroupMembers(target, scope, journal)
    this.signals = new GroupSignals(target, scope, journal, this.fields)
  }

  phase(sig: number): void {
    this.signals.phase(sig)
  }

  async sweep(): Promise<Array<Promise<unknown>>> {
    await this.members.refresh()
    // Signals by number (our unpinned child, the group by its id) go from the check phase only (see
    // pin.ts); nothing below awaits before they are sent.
    if (this.signals.byNumber()) await checkPhase()
    const live = this.members.live()
    this.signals.deliver(live)
    return live.map((m) => m.exited)
  }

  survivors(): number[] {
    return this.members.live().map((m) => m.handle.pid)
  }

  targetGone(): boolean {
    return this.members.exited(this.target.pid)
  }

  close(): void {
    this.signals.ledger.close()
    this.members.close()
  }
}
