/**
 * A group's members as the stop knows them: each pinned (a pidfd on Linux) before it is ever
 * signalled, and watched until its exit. A member that exits and whose pid is reused is never hit.
 */
import { ReapkitError } from '../../ground/errors'
import { nativeBinding } from '../../ground/native'
import { openProcess, ProcessHandle } from '../handle'
import type { GroupScope } from './group-scope'
import type { StopJournal } from './journal'
import { isGoneError, type PinnedTarget, pinAlive } from './pin'
import type { Pinned } from './types'

export interface Member {
  handle: Pinned
  /** Settles (never rejects) once the member is gone. */
  exited: Promise<unknown>
  gone: boolean
}

/** How often an exit is polled for when it cannot be watched by event (out of descriptors, say). */
const DEGRADED_POLL_MS = 25

export class GroupMembers {
  private readonly tracked = new Map<number, Member>()
  private finished = false

  constructor(
    private readonly target: PinnedTarget,
    private readonly scope: GroupScope,
    private readonly journal: StopJournal,
  ) {}

  /** Pins and records the current live members; the pinned leader always, even before it joins its group. */
  async refresh(): Promise<void> {
    const { pid, leader } = this.target
    const pids = await this.scope.list()
    if (this.scope.lostProof()) await this.proofLost()
    if (leader && !leader.closed && !pids.includes(pid)) pids.push(pid)
    for (const p of pids) {
      if (this.tracked.has(p)) continue
      const handle = p === pid && leader ? leader : this.pin(p)
      if (handle) this.track(p, handle)
    }
  }

  /**
   * The group can no longer be listed (its leader exited). Members still running may fork out of
   * reach; members that exited since the last listing may have forked before they did (the stop
   * waits for every pinned exit before it looks again). Either way the stop cannot say everything
   * is gone, unless a last listing by the group's id finds nothing (GroupScope.remains: exact when empty).
   */
  private async proofLost(): Promise<void> {
    const running = this.live().some((m) => pinAlive(m.handle))
    if (!running && !(await this.scope.remains((p) => this.exited(p)))) return
    const why = running ? 'while members ran' : 'and processes its members forked remain in it'
    this.journal.degraded(new ReapkitError('ERR_REAPKIT_GROUP_UNPROVEN', `process group ${this.scope.pgid} can no longer be listed (its leader ${this.target.pid} exited ${why}): a process they fork is not found`))
  }

  /** The members not seen to exit. */
  live(): Member[] {
    return [...this.tracked.values()].filter((m) => !m.gone)
  }

  /** Whether `pid` was tracked and seen to exit. */
  exited(pid: number): boolean {
    return this.tracked.get(pid)?.gone === true
  }

  /** Ends the polls of exits that could not be watched; closes every pin this stop opened. */
  close(): void {
    this.finished = true
    for (const m of this.tracked.values()) {
      if (this.borrowed(m.handle)) keepAlive(m.handle, -1)
      else m.handle.close()
    }
  }

  /** The caller's handle (theirs, or spawn's): neither closed nor unref'd by the stop. */
  private borrowed(handle: Pinned): boolean {
    return handle === this.target.leader && !this.target.ownLeader
  }

  /** A listed member, pinned and confirmed still in the group; null when it is gone or has moved. */
  private pin(pid: number): Pinned | null {
    let handle: Pinned
    try {
      handle = openProcess(pid)
    } catch (err) {
      if (!isGoneError(err)) this.journal.degraded(err) // a member we could not pin: it may remain
      return null // otherwise it exited between the listing and the pin
    }
    // Pinned now: if it is still in the group, the handle is that member.
    const pgid = this.scope.pgid
    const binding = nativeBinding()
    try {
      if (pgid !== null && binding && binding.getpgid(pid) !== pgid) {
        handle.close()
        return null
      }
    } catch (err) {
      if (!isGoneError(err)) this.journal.degraded(err)
      handle.close()
      return null
    }
    return handle
  }

  private track(pid: number, handle: Pinned): void {
    const member: Member = { handle, exited: Promise.resolve(), gone: false }
    member.exited = handle.exited.then(
      () => (member.gone = true),
      (err: unknown) => {
        if (handle.closed) return (member.gone = true) // closed by us at the end: nobody waits any more
        // The exit could not be watched (EMFILE when the watch needs a descriptor): it is not an
        // exit. Poll the pinned handle instead, which needs no descriptor, until it says gone.
        this.journal.degraded(err)
        return pollUntilGone(handle, () => this.finished).then(() => (member.gone = true))
      },
    )
    // The stop's own pins are closed at its end; a borrowed handle gets a hold of its own, added to
    // (and later taken from) the caller's ref(), which is the caller's to keep.
    if (this.borrowed(handle)) keepAlive(handle, 1)
    else handle.ref()
    this.tracked.set(pid, member)
  }
}

/** Keeps the loop alive while a borrowed handle's exit is awaited, apart from the caller's ref(). */
function keepAlive(handle: Pinned, delta: 1 | -1): void {
  if (handle instanceof ProcessHandle) ProcessHandle.hold(handle, delta)
}

/** Resolves once the pinned process has exited (signal 0 through the pin fails with ESRCH), or the pin is closed. */
async function pollUntilGone(handle: Pinned, finished: () => boolean): Promise<void> {
  while (!handle.closed && !finished()) {
    try {
      handle.signal(0)
    } catch (err) {
      if (isGoneError(err) || handle.closed) return
    }
    // Unref'd: the stop's own bounded wait keeps the loop alive while it needs the answer.
    await new Promise((res) => setTimeout(res, DEGRADED_POLL_MS).unref())
  }
}
