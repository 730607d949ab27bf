/**
 * The owner of a container run: who is to stop it. Written into the `reapkit.owner` label as
 * `<hostname>/<boot_id>/<pid>/<starttime>` (the contract shared with the C wrapper and doctor):
 *
 * - hostname: os.hostname(); boot_id: /proc/sys/kernel/random/boot_id (Linux; "-" elsewhere);
 * - pid: the owner process (the Node process for the library, the wrapper for the CLI);
 * - starttime: field 22 of /proc/<pid>/stat, clock ticks since boot (Linux; "-" elsewhere).
 *
 * A pid alone is recycled; pid + start time + boot names one process for good. So a leftover can be
 * told apart from a container whose owner still runs, and from anyone else's container: doctor
 * treats a container as leaked only when ownerStatus() says 'gone'.
 */
import { readFileSync } from 'node:fs'
import { hostname } from 'node:os'

export interface ContainerOwner {
  hostname: string
  /** The kernel's boot id (Linux), or '-' where there is none. */
  bootId: string
  pid: number
  /** Clock ticks since boot at which `pid` started (Linux), or '-' where unknown. */
  startTime: string
}

/** Field 22 of /proc/<pid>/stat (its start time), or null when there is no such process (or no /proc). */
export function processStartTime(pid: number): string | null {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
  } catch {
    return null
  }
  // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return fields[19] ?? null // fields[0] is field 3
}

let bootIdCache: string | undefined
/** The kernel's boot id, or '-' where there is none. */
export function bootId(): string {
  if (bootIdCache === undefined) {
    try {
      bootIdCache = readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim() || '-'
    } catch {
      bootIdCache = '-'
    }
  }
  return bootIdCache
}

/** The owner that `pid` (default: this process) would write: what a run started now is labelled with. */
export function ownerOf(pid: number = process.pid): ContainerOwner {
  return {
    hostname: hostname(),
    bootId: bootId(),
    pid,
    startTime: process.platform === 'linux' ? (processStartTime(pid) ?? '-') : '-',
  }
}

/** The label value: `<hostname>/<boot_id>/<pid>/<starttime>`. */
export function formatOwner(owner: ContainerOwner): string {
  return `${owner.hostname}/${owner.bootId}/${owner.pid}/${owner.startTime}`
}

/** The owner a label value names, or null when it is not one (another tool's label, a damaged value). */
export function parseOwner(value: string): ContainerOwner | null {
  if (typeof value !== 'string') return null
  const parts = value.split('/')
  if (parts.length !== 4) return null
  const [host, boot, pidText, start] = parts as [string, string, string, string]
  if (host === '' || boot === '' || !/^[1-9][0-9]*$/.test(pidText) || !/^([0-9]+|-)$/.test(start)) return null
  const pid = Number(pidText)
  if (!Number.isSafeInteger(pid)) return null
  return { hostname: host, bootId: boot, pid, startTime: start }
}

/**
 * What can be known here of `owner`:
 * - 'alive': this host, this boot, and its pid runs with the same start time (or, where start times
 *   cannot be read, its pid runs: then it cannot be told from a recycled pid, so it counts as alive);
 * - 'gone': this host, and an earlier boot, or its pid no longer runs, or runs with another start
 *   time (recycled);
 * - 'unknown': another host (a shared or remote engine): nothing here can tell.
 * Only 'gone' makes a container a leftover.
 */
export function ownerStatus(owner: ContainerOwner): 'alive' | 'gone' | 'unknown' {
  if (owner.hostname !== hostname()) return 'unknown'
  const boot = bootId()
  if (owner.bootId !== '-' && boot !== '-' && owner.bootId !== boot) return 'gone'
  if (process.platform === 'linux' && owner.startTime !== '-') {
    const now = processStartTime(owner.pid)
    return now === owner.startTime ? 'alive' : 'gone'
  }
  return pidRuns(owner.pid) ? 'alive' : 'gone'
}

/** True when the owner is this host and boot, and its pid runs with the same start time. */
export function ownerAlive(owner: ContainerOwner): boolean {
  return ownerStatus(owner) === 'alive'
}

function pidRuns(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as { code?: unknown }).code === 'EPERM' // someone else's process, but it runs
  }
}
