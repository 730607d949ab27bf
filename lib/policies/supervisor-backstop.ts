/**
 * The Supervisor's synchronous exit backstop: on process 'exit' (which Node also emits after an
 * uncaught exception or an unhandled rejection), every registered group still alive gets SIGKILL,
 * synchronously, from one listing of the process table.
 *
 * It cannot run when this process dies without running JavaScript: by SIGKILL, or by a signal it
 * does not handle (SIGTERM, SIGINT, SIGHUP with no listener). Then the kernel's parent-death signal
 * armed by spawn() takes the direct children, but not processes they started in their groups.
 * A child spawned into a cgroup of its own gets one `cgroup.kill`: every member, escapees included.
 */
import { scanGroups } from '../mechanisms/group'
import { openProcess } from '../mechanisms/handle'
import { binding } from '../ground/native'
import { spawnedGroupMembersSync, spawnedInfo } from '../mechanisms/spawn'
import { killCgroupSync } from '../mechanisms/cgroup/make'
import type { Entry } from './supervisor-registry'

/** What the backstop calls on each live supervisor. */
export interface Backstopped {
  killAllSync(table: Map<number, number[]> | null): void
}

const backstopped = new Set<Backstopped>()
let installed = false

/** Puts a supervisor under the backstop (installing the one 'exit' listener on first use). */
export function addToBackstop(s: Backstopped): void {
  backstopped.add(s)
  if (installed) return
  installed = true
  process.on('exit', () => {
    if (backstopped.size === 0) return
    const table = scanGroupsOrNull() // cannot list: still kill every pinned leader
    for (const b of backstopped) b.killAllSync(table)
  })
}

export function removeFromBackstop(s: Backstopped): void {
  backstopped.delete(s)
}

export function scanGroupsOrNull(): Map<number, number[]> | null {
  try {
    return scanGroups()
  } catch {
    return null
  }
}

/** SIGKILLs what remains of one entry; returns how many processes (or groups) were signalled. */
export function killEntrySync(entry: Entry, table: Map<number, number[]> | null): number {
  const { child } = entry
  const pgid = entry.record.pgid
  const unreaped = child.exitCode === null && child.signalCode === null
  let killed = 0
  // Its own cgroup (spawn({ cgroup: true })): one cgroup.kill ends every member, escapees included.
  const cgroup = spawnedInfo(child)?.cgroup
  if (cgroup !== undefined && killCgroupSync(cgroup)) killed++
  if (unreaped && pgid !== null && binding) {
    // The unreaped leader holds the group id: one atomic killpg, no listing needed.
    try {
      binding.killpg(pgid, 9)
      killed++
    } catch {
      // gone already
    }
    return killed
  }
  if (unreaped && entry.handle && !entry.handle.closed) {
    try {
      entry.handle.signal('SIGKILL')
      killed++
    } catch {
      // exited
    }
  }
  // A leader that is gone: its group only under the group-trust rule (spawn.ts).
  for (const p of pgid !== null && table !== null ? spawnedGroupMembersSync(child, table) : []) {
    try {
      const handle = openProcess(p) // pinned, then checked: never a recycled pid
      try {
        if (!binding || binding.getpgid(p) === pgid) {
          handle.signal('SIGKILL')
          killed++
        }
      } finally {
        handle.close()
      }
    } catch {
      // gone already
    }
  }
  return killed
}
