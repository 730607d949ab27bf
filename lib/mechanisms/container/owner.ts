/**
 * The owner of a container run: who is to stop it. Written into the `reapkit.owner` label as
 * `<hostname>/<boot_id>/<pid>/<starttime>/pidns:<inode>/mid:<machine_id>` (the contract shared with
 * the C wrapper and doctor):
 *
 * - hostname: os.hostname(); boot_id: /proc/sys/kernel/random/boot_id (Linux; "-" elsewhere);
 * - pid: the owner process (the Node process for the library, the wrapper for the CLI);
 * - starttime: field 22 of /proc/<pid>/stat, clock ticks since boot (Linux; "-" elsewhere);
 * - pidns: the inode of the owner's PID namespace (/proc/self/ns/pid, Linux), the namespace its pid
 *   is a number in; `pidns:-` on Linux where it cannot be read (never judged). Always written on
 *   Linux, even under a /proc of another namespace (`unshare --pid --fork` without `--mount-proc`):
 *   that link is the writer's own through any /proc, and a label without it would be judged by its
 *   pid in the reader's namespace. Left out only where there are no PID namespaces (macOS): then
 *   the label has four fields, as every label did before the field existed, and is read as before.
 *   Under a /proc of another namespace the start time is `-`: that /proc's entry at our pid number
 *   is another process, if any.
 * - mid: the machine id (/etc/machine-id, else /var/lib/dbus/machine-id; `mid:-` where neither
 *   holds one), written on Linux after the namespace. A boot id says which boot of *a* machine;
 *   only with the machine id does another boot id mean an earlier boot of *this* one: two machines
 *   of one name on one engine (a shared daemon, cloned VMs, every container called `localhost`)
 *   must never read each other's live runs as leftovers. Labels without it (written before it was
 *   recorded) are never judged by their boot id.
 *
 * A pid alone is recycled; pid + start time + boot names one process for good, but only within its
 * PID namespace: the same number in another one names another process. So an owner is judged only
 * from its own namespace, and a leftover can be told apart from a container whose owner still runs,
 * and from anyone else's container: doctor treats a container as leaked only when ownerVerdict()
 * says 'gone'.
 */
import { readFileSync, readlinkSync } from 'node:fs'
import { hostname } from 'node:os'

export interface ContainerOwner {
  hostname: string
  /** The kernel's boot id (Linux), or '-' where there is none. */
  bootId: string
  pid: number
  /** Clock ticks since boot at which `pid` started (Linux), or '-' where unknown. */
  startTime: string
  /**
   * The owner's PID namespace, `pidns:<inode>` (Linux; `pidns:-` when its writer could not read
   * it); absent where there is none (macOS), and in labels written before reapkit recorded it.
   */
  pidNamespace?: string
  /**
   * The owner's machine id, `mid:<32 hex>` (Linux; `mid:-` when its writer had none); absent in
   * labels written before reapkit recorded it, and where there is no PID namespace field (macOS).
   */
  machineId?: string
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

let machineIdCache: string | undefined
/**
 * This machine's id as `mid:<32 lowercase hex>` (systemd's /etc/machine-id, else D-Bus's copy), or
 * `mid:-` where neither holds one (a container image without it, not Linux). Read once, bounded.
 */
export function machineId(): string {
  if (machineIdCache !== undefined) return machineIdCache
  machineIdCache = 'mid:-'
  if (process.platform !== 'linux') return machineIdCache
  for (const file of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
    try {
      // Exactly the C wrapper's check (native/supervise/owner.c): 32 lowercase hex digits and at
      // most one newline; no trimming, so both writers give every machine the same field.
      const text = readFileSync(file, 'latin1').slice(0, 64)
      if (/^[0-9a-f]{32}\n?$/.test(text)) return (machineIdCache = `mid:${text.slice(0, 32)}`)
    } catch {
      // not there: the next, or none
    }
  }
  return machineIdCache
}

let bootStartCache: number | null | undefined
/** When this boot began (ms since the epoch, /proc/stat's btime), or null where it cannot be read. */
export function bootStartMs(): number | null {
  if (bootStartCache !== undefined) return bootStartCache
  bootStartCache = null
  try {
    const m = /^btime ([0-9]+)$/m.exec(readFileSync('/proc/stat', 'latin1'))
    if (m) bootStartCache = Number(m[1]) * 1000
  } catch {
    // no /proc
  }
  return bootStartCache
}

let procOurs: boolean | undefined
/**
 * Whether this /proc numbers processes as this process's PID namespace does (its `self` is our
 * pid): false under a /proc mounted for another namespace (`unshare --pid --fork` without
 * `--mount-proc`), where no pid of ours can be looked up, and where there is no /proc (or not Linux).
 */
function procIsOurs(): boolean {
  if (procOurs === undefined) {
    procOurs = false
    try {
      procOurs = process.platform === 'linux' && readlinkSync('/proc/self') === String(process.pid)
    } catch {
      // no /proc
    }
  }
  return procOurs
}

/**
 * This process's PID namespace (ownPidNamespaceLink()), or null when this /proc is not of it:
 * a /proc mounted for another namespace numbers its processes differently, so no owner's pid can be
 * looked up here (ownerNamespace() then says 'other' for every label: nothing is judged).
 */
export function ownPidNamespace(): string | null {
  return procIsOurs() ? ownPidNamespaceLink() : null
}

let ownLink: string | null | undefined
/**
 * This process's PID namespace as `pidns:<inode>`, read once, or null where it cannot be read (no
 * /proc, not Linux). Its own even through another namespace's /proc (`ns/pid` of `self` is the
 * reader's), and a process never changes its own.
 */
export function ownPidNamespaceLink(): string | null {
  if (ownLink !== undefined) return ownLink
  ownLink = null
  // Linux only: under Wine, /proc is Linux's, and its `self` is not the Windows process's pid space.
  if (process.platform !== 'linux') return ownLink
  try {
    const m = /^pid:\[([0-9]+)\]$/.exec(readlinkSync('/proc/self/ns/pid'))
    if (m) ownLink = `pidns:${m[1]}`
  } catch {
    // no /proc
  }
  return ownLink
}

/**
 * The owner that `pid` (default: this process; a pid as this process numbers it) would write: what
 * a run started now is labelled with. On Linux it always names a namespace (`pidns:-` when the link
 * cannot be read), so that no label written here is read as one from before the field existed.
 */
export function ownerOf(pid: number = process.pid): ContainerOwner {
  const linux = process.platform === 'linux'
  const start = procIsOurs() ? (processStartTime(pid) ?? '-') : '-'
  return {
    hostname: hostname(),
    bootId: bootId(),
    pid,
    startTime: start,
    ...(linux ? { pidNamespace: ownPidNamespaceLink() ?? UNKNOWN_NAMESPACE, machineId: machineId() } : {}),
  }
}

/** The namespace field of a Linux label whose writer could not read its own: never the reader's, so never judged. */
const UNKNOWN_NAMESPACE = 'pidns:-'

/** The label value: `<hostname>/<boot_id>/<pid>/<starttime>`, then `/pidns:<inode>` and `/mid:<id>` when known. */
export function formatOwner(owner: ContainerOwner): string {
  const ns = owner.pidNamespace !== undefined ? `/${owner.pidNamespace}` : ''
  const mid = owner.pidNamespace !== undefined && owner.machineId !== undefined ? `/${owner.machineId}` : ''
  return `${owner.hostname}/${owner.bootId}/${owner.pid}/${owner.startTime}${ns}${mid}`
}

/**
 * The owner a label value names, or null when it is not one (another tool's label, a damaged
 * value). Four fields (a label without a namespace: macOS, or written before it was recorded), five
 * (with the namespace, written before the machine id was recorded) or six.
 */
export function parseOwner(value: string): ContainerOwner | null {
  if (typeof value !== 'string') return null
  const parts = value.split('/')
  if (parts.length < 4 || parts.length > 6) return null
  const [host, boot, pidText, start, ns, mid] = parts as [string, string, string, string, string | undefined, string | undefined]
  if (host === '' || boot === '' || !/^[1-9][0-9]*$/.test(pidText) || !/^([0-9]+|-)$/.test(start)) return null
  if (ns !== undefined && !/^pidns:([1-9][0-9]*|-)$/.test(ns)) return null
  if (mid !== undefined && !/^mid:([0-9a-f]{32}|-)$/.test(mid)) return null
  const pid = Number(pidText)
  if (!Number.isSafeInteger(pid)) return null
  return { hostname: host, bootId: boot, pid, startTime: start, ...(ns !== undefined ? { pidNamespace: ns } : {}), ...(mid !== undefined ? { machineId: mid } : {}) }
}

/**
 * Whether the owner's pid can be read from here: 'same' when its label names this process's PID
 * namespace; 'other' when it names another one, or one this process cannot compare with its own
 * (then its pid means nothing here: never judged); 'unrecorded' for a label without one.
 */
export function ownerNamespace(owner: ContainerOwner): 'same' | 'other' | 'unrecorded' {
  if (owner.pidNamespace === undefined) return 'unrecorded'
  return owner.pidNamespace === ownPidNamespace() ? 'same' : 'other'
}

/** What can be known here of an owner (ownerVerdict), and why in words ('' when it is alive). */
export interface OwnerVerdict {
  status: 'alive' | 'gone' | 'unknown'
  why: string
}

/**
 * What can be known here of `owner`, and why:
 * - 'alive': this host, this boot, and its pid runs with the same start time (or, where start times
 *   cannot be read, its pid runs: then it cannot be told from a recycled pid, so it counts as alive);
 * - 'gone': this host, and an earlier boot of this machine (earlierBoot()), or (in this PID
 *   namespace, or a label without one) its pid no longer runs, or runs with another start time
 *   (recycled);
 * - 'unknown': another host (a shared or remote engine), another boot id that cannot be told to be
 *   an earlier boot of this machine, or this boot and another PID namespace (ownerNamespace()
 *   'other'): nothing here can tell.
 * `unrecordedPid: false` (doctor in a child PID namespace): a label that names no namespace is not
 * judged by its pid either (a pid not seen here may be a process outside that runs on): only an
 * earlier boot proves it gone. `createdMs`: when the engine says the container was created (its
 * own record, not the label's word). Only 'gone' makes a container a leftover.
 */
export function ownerVerdict(owner: ContainerOwner, options: { unrecordedPid?: boolean; createdMs?: number } = {}): OwnerVerdict {
  const host = hostname()
  if (owner.hostname !== host) return { status: 'unknown', why: `its owner is on host ${owner.hostname}, not this one (${host}): not ours to judge` }
  const boot = bootId()
  if (owner.bootId !== '-' && boot !== '-' && owner.bootId !== boot) return earlierBoot(owner, options.createdMs)
  const ns = ownerNamespace(owner)
  if (ns === 'other') {
    const here = ownPidNamespace() ?? 'a namespace that cannot be read'
    return { status: 'unknown', why: `owner in another PID namespace: not judged (its owner, pid ${owner.pid}, is in ${owner.pidNamespace}; doctor runs in ${here})` }
  }
  const now = process.platform === 'linux' ? processStartTime(owner.pid) : null
  const alive = process.platform === 'linux' && owner.startTime !== '-' ? now === owner.startTime : pidRuns(owner.pid)
  if (alive) return { status: 'alive', why: '' }
  if (ns === 'unrecorded' && options.unrecordedPid === false) {
    return { status: 'unknown', why: `its owner, pid ${owner.pid}, is not seen from this PID namespace (a child one) and its label names none: it may run outside it, not ours to judge` }
  }
  if (now === null) return { status: 'gone', why: `its owner, pid ${owner.pid}, is gone` }
  return { status: 'gone', why: `its owner, pid ${owner.pid}, is gone (that pid now names another process: start time ${now}, not ${owner.startTime})` }
}

/**
 * An owner label of this host name with another boot id: an earlier boot of this machine (every
 * process and namespace of it ended: 'gone') only when the label names this machine's id, and the
 * engine (when its record is at hand) created the container before this boot began. Anything else
 * may be another machine of the same name on the same engine, whose owner may well be alive:
 * 'unknown', never stopped.
 */
function earlierBoot(owner: ContainerOwner, createdMs: number | undefined): OwnerVerdict {
  const mine = machineId()
  const tail = 'an earlier boot of this machine cannot be told from another machine of the same name: not ours to judge'
  if (owner.machineId === undefined || owner.machineId === 'mid:-') {
    return { status: 'unknown', why: `its owner (pid ${owner.pid}) ran under another boot id and its label names no machine id: ${tail}` }
  }
  if (mine === 'mid:-') return { status: 'unknown', why: `its owner (pid ${owner.pid}) ran under another boot id and this machine has no machine id to compare: ${tail}` }
  if (owner.machineId !== mine) return { status: 'unknown', why: `its owner (pid ${owner.pid}) ran on another machine (${owner.machineId}) of the same name: not ours to judge` }
  const bootStart = bootStartMs()
  if (createdMs !== undefined && bootStart !== null && createdMs >= bootStart) {
    return { status: 'unknown', why: `its owner (pid ${owner.pid}) names this machine but another boot, while the engine created it during this boot (a copied machine id?): not ours to judge` }
  }
  return { status: 'gone', why: `its owner (pid ${owner.pid}) ran in an earlier boot` }
}

/** ownerVerdict()'s status. */
export function ownerStatus(owner: ContainerOwner): 'alive' | 'gone' | 'unknown' {
  return ownerVerdict(owner).status
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
