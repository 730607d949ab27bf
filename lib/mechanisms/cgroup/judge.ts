/**
 * Whether the process a reapkit cgroup's name names (name.ts) is gone, by the rule containers'
 * owner labels follow (container/owner.ts's ownerVerdict): 'gone' only when provably gone, never on
 * a guess. A cgroup's name is checked against this host, this boot and this PID namespace, then:
 *
 * - 'alive': its pid runs with the start time in the name (where the name has none, its pid runs:
 *   a recycled pid cannot be told apart then, so it counts as alive);
 * - 'gone': its pid no longer runs, or runs with another start time (recycled);
 * - 'unknown': another host name (a container's own UTS name over a shared hierarchy), another boot
 *   id (cgroupfs does not outlive its boot: such a name was not written by this kernel's reapkit),
 *   another PID namespace or none recorded (its pid means nothing here), or a field its writer
 *   could not read. Only 'gone' makes a cgroup a leftover.
 *
 * Whose the cgroup is (its directory's owner uid) is the caller's question, asked first: a name is
 * its writer's word, and only a cgroup of the reader's own uid is judged by it at all.
 */
import { bootId, type OwnerVerdict, ownPidNamespace, processStartTime } from '../container/owner'
import { type CgroupOwner, safeHostname } from './name'

export type { OwnerVerdict } from '../container/owner'

/** What can be known here of the process that made a cgroup (see the file's comment). */
export function cgroupOwnerVerdict(owner: CgroupOwner): OwnerVerdict {
  const who = `its maker, pid ${owner.pid}`
  const host = safeHostname()
  if (owner.hostname !== host) return { status: 'unknown', why: `${who}, is on host ${owner.hostname}, not this one (${host}): not ours to judge` }
  const boot = bootId().replace(/-/g, '')
  if (owner.bootId === '-' || boot === '-') return { status: 'unknown', why: `${who}: its boot id or ours cannot be read: not ours to judge` }
  if (owner.bootId !== boot) return { status: 'unknown', why: `${who}, names another boot (a cgroup never outlives its boot: not written by this kernel's reapkit): not ours to judge` }
  const here = ownPidNamespace()
  if (owner.pidNamespace === '-' || here === null || `pidns:${owner.pidNamespace}` !== here) {
    return { status: 'unknown', why: `${who}, is in another PID namespace (pidns:${owner.pidNamespace}; doctor runs in ${here ?? 'one that cannot be read'}): not ours to judge` }
  }
  const now = processStartTime(owner.pid)
  if (owner.startTime === '-') {
    return now === null ? { status: 'gone', why: `${who}, is gone` } : { status: 'alive', why: '' }
  }
  if (now === owner.startTime) return { status: 'alive', why: '' }
  if (now === null) return { status: 'gone', why: `${who}, is gone` }
  return { status: 'gone', why: `${who}, is gone (that pid now names another process: start time ${now}, not ${owner.startTime})` }
}
