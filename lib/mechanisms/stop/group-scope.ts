/**
 * Which pids are a group's, provably. A group id is listed only while it is provably the target's:
 * for a child that spawn() started or Supervisor adopted, by the group-trust rule of spawn.ts
 * (witnesses); for anything else, while its pinned leader is alive before and after the scan (its
 * pid holds the id). Once that cannot be proven, the group is never listed again: a straggler may
 * be missed, a stranger never hit.
 */
import { binding } from '../../ground/native'
import { groupMembersSoon } from '../group'
import { type SpawnedInfo, spawnedGroupMembers, spawnedInfo } from '../spawn'
import type { StopJournal } from './journal'
import { type PinnedTarget, pinAlive } from './pin'

export class GroupScope {
  private gone = false
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
      if (!pinAlive(leader)) {
        this.gone = true
        return []
      }
      const members = await groupMembersSoon(pgid)
      if (!pinAlive(leader)) {
        this.gone = true
        return []
      }
      return members
    } catch (err) {
      this.journal.degraded(err) // not "empty": unknown. Keep to what is pinned.
      return []
    }
  }

  /** Whether `pid` is in the group now (a member may move with setpgid). */
  has(pid: number): boolean {
    try {
      return binding!.getpgid(pid) === this.pgid
    } catch {
      return false
    }
  }
}
