/**
 * The resolve step: from what the caller passed to the pid, the child, the handle already pinned
 * and the group; and the refusals (this process, its own group) before anything is signalled.
 */
import type { ChildProcess } from 'node:child_process'
import { rangeError, typeError } from '../../ground/errors'
import { nativeBinding } from '../../ground/native'
import { isSelf, validatePid } from '../../ground/validate'
import { isChildProcess, type ProcessTarget } from '../exit'
import { ProcessHandle } from '../handle'
import { spawnedInfo } from '../spawn'
import type { StopOptions } from './options'
import { pinAlive } from './pin'
import type { Pinned } from './types'

export interface ResolvedTarget {
  pid: number
  /** Our own child, when the caller passed a ChildProcess (its status is exact). */
  child: ChildProcess | null
  /** The target's pin, or null when it is known to be gone (or not pinned yet). */
  leader: Pinned | null
  /** The group spawn() made (or Supervisor adopted) for the child, where known. */
  knownPgid: number | null
}

/** Who: the pid, the leader already pinned (if it still runs), the child, its known group. */
export function resolveTarget(target: ProcessTarget, options: StopOptions): ResolvedTarget {
  let child: ChildProcess | null = null
  let pid: number
  let leader: Pinned | null = null
  let knownPgid: number | null = null
  if (isChildProcess(target)) {
    child = target
    if (child.pid === undefined) throw typeError('ERR_INVALID_ARG_VALUE', 'The child process was never spawned (it has no pid)')
    pid = validatePid(child.pid, 'child.pid')
    const info = spawnedInfo(child)
    knownPgid = info?.pgid ?? null
    if (info?.handle && !info.handle.closed) leader = info.handle
  } else if (target instanceof ProcessHandle) {
    pid = target.pid
    // Its pin is gone: the pid may name another process by now, so it is not pinned again by number.
    if (target.closed) throw typeError('ERR_INVALID_ARG_VALUE', `The handle for pid ${pid} is closed: it no longer proves which process the pid names`)
    leader = target
  } else {
    pid = validatePid(target)
  }
  // A child spawn() pinned at its start is proven ours, and our own child's pid is never this
  // process (nor one of its threads): the look in /proc is skipped for it alone (at 5,000 stops,
  // ~15 µs each on the shutdown's one loop). Anything else shaped like a ChildProcess proves nothing.
  if (!(child !== null && spawnedInfo(child)?.handle) && isSelf(pid) && !options.allowSelf) {
    throw rangeError('ERR_REAPKIT_SELF', `Refusing to signal this process itself (pid ${pid}); pass { allowSelf: true }`)
  }
  return { pid, child, leader, knownPgid }
}

/**
 * The group to signal (POSIX), or null for the process alone: the child's known group, else the
 * target's own group while it leads one (asked by number, confirmed through the pin), or the group
 * of its pid when `group: true` asks for it and there is one. This process's own group is refused
 * unless `allowSelf`.
 */
export function resolveGroup(t: ResolvedTarget, options: StopOptions): number | null {
  const binding = nativeBinding()
  let pgid: number | null = null
  if (options.group !== false) {
    if (t.knownPgid !== null) pgid = t.knownPgid
    else if (t.leader && binding) {
      try {
        // By number, then confirmed through the pidfd: the answer was about this very process.
        if (binding.getpgid(t.pid) === t.pid && pinAlive(t.leader)) pgid = t.pid
      } catch {
        // exited meanwhile
      }
    }
    if (options.group === true && pgid === null && groupOfPidExists(t)) pgid = t.pid
  }
  if (pgid !== null && binding && !options.allowSelf && pgid === binding.getpgid(0)) {
    throw rangeError('ERR_REAPKIT_SELF', `Refusing to signal this process's own process group (pgid ${pgid}); pass { allowSelf: true }`)
  }
  return pgid
}

/**
 * `group: true` on a process that leads no group: a group of its pid exists only if the process
 * made it and then left it (its id stays in use while members remain). Asked while its pin holds
 * the pid, so the answer is about that very group; none (ESRCH), and the process is stopped alone.
 */
function groupOfPidExists(t: ResolvedTarget): boolean {
  const binding = nativeBinding()
  if (!binding || !pinAlive(t.leader)) return false
  try {
    binding.killpg(t.pid, 0)
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'EPERM') return false
  }
  return pinAlive(t.leader)
}
