/** The cgroup unit of a stop's target: our own child that spawn() contained in a cgroup of its own. */
import { spawnedInfo } from '../spawn'
import { CgroupUnit } from './cgroup-unit'
import type { StopJournal } from './journal'
import type { PinnedTarget } from './pin'

/** The child's cgroup as a unit, or null (not contained). One already removed (it emptied) is reported gone. */
export function cgroupUnitOf(target: PinnedTarget, journal: StopJournal): CgroupUnit | null {
  const info = target.child ? spawnedInfo(target.child) : undefined
  if (info?.cgroup === undefined) return null
  return new CgroupUnit(info.cgroup, target.pid, journal, { forwardsIntoPidNamespace: info.pidNamespace === true })
}
