/**
 * Which pids are a group's, provably. A group id is listed only while it is provably the target's:
 * for a child that spawn() started or Supervisor adopted, by the group-trust rule of spawn.ts
 * (witnesses); for anything else, while its pinned leader is alive before and after the scan (its
 * pid holds the id). Once that cannot be proven, the group is never listed again: a straggler may
 * be missed, a stranger never hit.
 */
import { nativeBinding } from '../../ground/native'
import { groupMembersSoon } from '../group'
import type { SpawnedInfo } from '../spawn'
import { spawnedGroupMembers, spawnedInfo } from '../spawned'
import type { StopJournal } from './journal'
import { type PinnedTarget, pinAlive } from './pin'

export class GroupScope {
  private gone = false
  /** The group stopped being provably the target's while the stop went on (its pinned leader exited). */
  private unproven = false
  private readonly info: SpawnedInfo | undefined

  constructor(
    private readonly target: PinnedTarget,
    /** The group, or null when only the process itself is stopped. */
    readonly pgid: number | null,
    private readonly journal: StopJournal,
  ) {
    this.info = target.child ? spawnedInfo(target.child) : undefined
  }

  /** The group's members now; [] once it cannot be proven to be the target's, or cannot be listed. */
  async list(): Promise<number[]> {
    const { pgid, info } = this
    const { child, leader } = this.target
    if (pgid === null || this.gone) return []
    try {
      if (child && info && info.pgid === pgid) {
        const members = await spawnedGroupMembers(child)
        if (info.groupGone) this.gone = true
        return members
      }
      if (!pinAlive(leader)) return this.lose()
      const members = await groupMembersSoon(pgid)
      if (!pinAlive(leader)) return this.lose()
      return members
    } catch (err) {
      this.journal.degraded(err) // not "empty": unknown. Keep to what is pinned.
      return []
    }
  }

  /**
   * Whether the group has just stopped being provable (once: the call that saw it says so). A member
   * still alive then may fork a process the stop can no longer find: the caller says so.
   */
  lostProof(): boolean {
    const lost = this.unproven
    this.unproven = false
    return lost
  }

  /**
   * Once the group is no longer provable: whether a listing by its id still finds processes (other
   * than `known`, pinned members seen to exit, which may linger as zombies). Evidence only, never a
   * target: the id may by now be a stranger's. But an empty answer is exact: a group id is not
   * reused while any process is in the group (the kernel keeps the pid while it is a pgid), so with
   * none listed nothing is left that a member forked; one listed is a member forked after the last
   * provable listing (or, rarely, a stranger's group: then the stop says uncertain, needlessly).
   */
  async remains(known: (pid: number) => boolean): Promise<boolean> {
    if (this.pgid === null) return false
    try {
      return (await groupMembersSoon(this.pgid)).some((pid) => !known(pid))
    } catch (err) {
      this.journal.degraded(err) // unknown, not empty
      return false
    }
  }

  /**
   * Whether the group is the one spawn() made for the target (or Supervisor adopted), not yet seen
   * gone: while the target, our own child, is unreaped, its pid holds this id (spawn.ts).
   */
  ownChildGroup(): boolean {
    const { info, pgid } = this
    return this.target.child !== null && info !== undefined && pgid !== null && info.pgid === pgid && pgid === this.target.pid && !info.groupGone
  }

  private lose(): [] {
    this.gone = true
    this.unproven = true
    return []
  }

  /** Whether `pid` is in the group now (a member may move with setpgid). */
  has(pid: number): boolean {
    try {
      return nativeBinding()!.getpgid(pid) === this.pgid
    } catch {
      return false
    }
  }
}
