/**
 * What a stop can see of what its target started (KillResult.reach), so that a report with no
 * survivors is never read as more than it is. A process group is what a stop without a cgroup
 * sees: a descendant that left it (setsid, a double fork: a daemon) is neither signalled nor
 * counted, and such a stop says 'group', never 'cgroup'.
 */
import type { ChildProcess } from 'node:child_process'
import { spawnedInfo } from '../spawn'

/**
 * - 'cgroup': the child's own cgroup (spawn({ cgroup: true })): everything it started, escapees of
 *   its group included. A member can move itself out where it may write a `cgroup.procs` above it:
 *   root, or any process of the user a subtree is delegated to; the group unit still covers one
 *   that stayed in the group, and one that left both is not seen (as with 'group');
 * - 'group': its process group: what left the group is not seen;
 * - 'process': the target alone (`group: false`, or a target that leads no group of ours);
 * - 'job': Windows, the Job object reapkit's spawn() ran it in (a process started with breakaway
 *   is not in it); a Windows target without one is 'process'.
 */
export type StopReach = 'cgroup' | 'group' | 'process' | 'job'

/** The reach of a stop of `child` (or of a pid: no child) whose group is `pgid` (null: the process alone). */
export function reachOf(child: ChildProcess | undefined | null, pgid: number | null): StopReach {
  const info = child ? spawnedInfo(child) : undefined
  // Windows: a child of reapkit's spawn runs in a job; anything else is one process (job-unit.ts).
  if (process.platform === 'win32') return info?.job === true ? 'job' : 'process'
  if (info?.cgroup !== undefined) return 'cgroup'
  return pgid !== null ? 'group' : 'process'
}
