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
import { scanGroups } from '../../mechanisms/group'
import { openProcess } from '../../mechanisms/handle'
import { nativeBinding } from '../../ground/native'
import { spawnedGroupMembersSync, spawnedInfo } from '../../mechanisms/spawned'
import { killCgroup, killCgroupNow, removeKilledSync, removeWhenEmpty } from '../../mechanisms/cgroup/make'
import type { Entry } from './registry'

/** What the backstop calls on each live supervisor. */
export interface Backstopped {
  killAllSync(table: Map<number, number[]> | null, killedCgroups?: string[]): void
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
    // Every cgroup.kill first, then one bounded wait for them all to empty (not one per cgroup).
    const killedCgroups: string[] = []
    for (const b of backstopped) b.killAllSync(table, killedCgroups)
    removeKilledSync(killedCgroups)
  })
}

export function removeFromBackstop(s: Backstopped): void {
  backstopped.delete(s)
}

function killCgroupQuietly(path: string): boolean {
  try {
    return killCgroup(path)
  } catch {
    return false // not ours to write any more
  }
}

export function scanGroupsOrNull(): Map<number, number[]> | null {
  try {
    return scanGroups()
  } catch {
    return null
  }
}

/**
 * SIGKILLs what remains of one entry; returns how many processes (or groups) were signalled. Its
 * cgroup, killed, goes on `killedCgroups` for the caller's one wait and removal (removeKilledSync);
 * without that list (the loop still runs), it is removed once empty, by event.
 */
export function killEntrySync(entry: Entry, table: Map<number, number[]> | null, killedCgroups?: string[]): number {
  const { child } = entry
  const pgid = entry.record.pgid
  const unreaped = child.exitCode === null && child.signalCode === null
  const binding = nativeBinding()
  let killed = 0
  // Its own cgroup (spawn({ cgroup: true })): one cgroup.kill ends every member, escapees included.
  const cgroup = spawnedInfo(child)?.cgroup
  if (cgroup !== undefined && killedCgroups !== undefined) {
    if (killCgroupNow(cgroup)) {
      killed++
      killedCgroups.push(cgroup)
    }
  } else if (cgroup !== undefined) {
    if (killCgroupQuietly(cgroup)) killed++
    removeWhenEmpty(cgroup) // a stop under way holds it: then its close removes it
  }
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
