/**
 * killProcessGracefully(target): signal (SIGTERM) the whole process group, wait by kernel event,
 * and after a bounded grace send the kill signal (SIGKILL) to whatever remains.
 *
 * "Done" means no live process remains in the group (zombies do not count; members still running
 * after the leader exited are waited for too), not merely that the leader exited. A well-behaved
 * group is not delayed: the call returns as soon as it is gone.
 *
 * The stop is a few named steps (resolve, pin, signal and settle, escalate and confirm, report)
 * over its units (unit.ts): the target's process group on POSIX (group-unit.ts), its Job object on
 * Windows (job-unit.ts), the child's own cgroup where spawn() contained it (cgroup-unit.ts), and for a container client that spawn() started, its container, ended and
 * confirmed gone through its engine (container/unit.ts), under the same deadline. Every member is
 * pinned (a pidfd on Linux) before it is signalled, and signalled through that handle: a member
 * that exits and whose pid is reused is never hit.
 */
import { containerUnitsOf } from '../container/child'
import type { ProcessTarget } from '../exit'
import { cgroupUnitOf } from './cgroup-of'
import { stopUnits } from './escalate'
import { GroupUnit } from './group-unit'
import { JobUnit } from './job-unit'
import { StopJournal } from './journal'
import { readKillOptions, type StopOptions } from './options'
import { pinTarget, type PinnedTarget } from './pin'
import { report } from './report'
import { resolveGroup, resolveTarget } from './resolve'
import type { KillOptions, KillResult } from './types'
import type { TargetUnit } from './unit'

/** Sends signal -> waits by event -> escalates after a bounded grace; resolves to a KillResult. */
export async function killProcessGracefully(target: ProcessTarget, options: KillOptions = {}): Promise<KillResult> {
  return stopTarget(target, readKillOptions(options))
}

/** @internal killProcessGracefully with its options read (readKillOptions), and deadlines of the caller's choosing (deadlines.ts). */
export async function stopTarget(target: ProcessTarget, opts: StopOptions): Promise<KillResult> {
  const journal = new StopJournal(opts.logger)
  const pinned = await pinTarget(resolveTarget(target, opts))
  // Windows: no groups, no signals; the Job object is the group.
  const unit: TargetUnit = process.platform === 'win32'
    ? new JobUnit(pinned, journal)
    : new GroupUnit(pinned, groupOf(pinned, opts), journal)
  // A container client's container goes beside it, through its engine.
  const containers = containerUnitsOf(pinned.child, journal, opts)
  // A child in a cgroup of its own: the cgroup beside its group (what left the group is in it).
  const cgroup = cgroupUnitOf(pinned, journal)
  const outcome = await stopUnits([unit, ...(cgroup ? [cgroup] : []), ...containers], opts, journal)
  return report(pinned, unit, outcome, journal, containers.map((c) => c.outcome()), cgroup?.outcome())
}

/** resolveGroup(), releasing the pin this stop opened when it refuses (this process's own group). */
function groupOf(pinned: PinnedTarget, opts: StopOptions): number | null {
  try {
    return resolveGroup(pinned, opts)
  } catch (err) {
    if (pinned.ownLeader) pinned.leader?.close()
    throw err
  }
}
