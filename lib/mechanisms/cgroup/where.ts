/**
 * Where a cgroup is ours to make (Linux, cgroup v2): the v2 mount, our own cgroup in it, and
 * whether we may create children there. Computed once, on first use (not at require).
 *
 * systemd's single-writer rule: a cgroup a systemd unit owns is systemd's to write, unless it was
 * delegated. So we make children only:
 * - inside our own cgroup namespace (a container's: its cgroups are the container's own) where no
 *   systemd runs (a systemd in the container owns its namespace, and its rule holds there), or
 * - inside a subtree delegated to us: systemd chowns a delegated subtree to the user it runs (a
 *   user session's user@UID.service), so a cgroup that is ours by ownership, as non-root, is one;
 * - as root where no systemd manages the tree (no /run/systemd/system: sd_booted()'s test).
 * Never inside a unit systemd manages without delegation. A root service with `Delegate=yes` is
 * marked only by an xattr (trusted.delegate) that Node cannot read without the addon: refused
 * today, with that reason (never written on a guess).
 *
 * And only where the kernel has what the stop needs: `cgroup.kill` (5.14). Our cgroup must accept
 * children: a "domain" cgroup whose own processes are allowed, i.e. no controllers enabled in its
 * `cgroup.subtree_control` (the no-internal-processes rule would refuse a child holding ours).
 */
import { accessSync, constants, readFileSync, statSync } from 'node:fs'
import { release } from 'node:os'
import { join } from 'node:path'

export interface CgroupCapability {
  /** spawn({ cgroup: true }) can contain a child in a cgroup of its own here. */
  available: boolean
  /** Our own cgroup's directory, under which children are made (when available). */
  path?: string
  /** Why not, when not available. */
  reason?: string
}

/** The initial cgroup namespace's inode (include/linux/proc_ns.h, PROC_CGROUP_INIT_INO): any other is a namespace of its own. */
const INITIAL_CGROUP_NS_INO = 0xeffffffb

let where: CgroupCapability | undefined

/** Where this process may make cgroups (cached: our cgroup does not move under us, nor does the kernel). */
export function cgroupCapability(): CgroupCapability {
  where ??= decide()
  return { ...where }
}

/** @internal For tests: forget the cached answer. */
export function resetCgroupCapability(): void {
  where = undefined
}

function no(reason: string): CgroupCapability {
  return { available: false, reason }
}

function decide(): CgroupCapability {
  if (process.platform !== 'linux') return no(`cgroups are Linux's (this is ${process.platform})`)
  if (!kernelAtLeast(5, 14)) return no(`kernel ${release()} has no cgroup.kill (5.14+)`)
  const mount = cgroup2Mount()
  if (mount === null) return no('no cgroup v2 hierarchy is mounted (no cgroup2 in /proc/self/mountinfo)')
  const own = ownCgroup()
  if (own === null) return no('this process is in no cgroup v2 (no 0:: line in /proc/self/cgroup)')
  const path = own === '/' ? mount : join(mount, own)
  if (!isDirectory(path)) return no(`our cgroup ${own} is not visible under the v2 mount ${mount}`)
  const owner = ownership(path)
  if (owner !== null) return no(owner)
  try {
    const enabled = readFileSync(join(path, 'cgroup.subtree_control'), 'latin1').trim()
    if (enabled !== '' && own !== '/') return no(`our cgroup ${path} enables controllers (${enabled}) for its children: a child cgroup could not hold a process while we stay in it`)
  } catch (err) {
    return no(`cannot read ${path}/cgroup.subtree_control (${(err as Error).message})`)
  }
  try {
    accessSync(path, constants.W_OK)
    accessSync(join(path, 'cgroup.procs'), constants.W_OK)
  } catch {
    return no(`our cgroup ${path} is not writable by this process`)
  }
  return { available: true, path }
}

/** null when we may write under `path` (see the rule above), else why not. */
function ownership(path: string): string | null {
  const systemd = exists('/run/systemd/system')
  // A systemd inside a container owns that container's namespace: its rule first, then.
  if (!systemd && ownCgroupNamespace()) return null
  const euid = process.geteuid?.() ?? -1
  if (euid !== 0) {
    // Ours by ownership: how systemd delegates to a user (and how anyone delegates by hand).
    try {
      if (statSync(path).uid === euid) return null
    } catch {
      // unreadable: not ours
    }
    return systemd
      ? `our cgroup ${path} belongs to a unit systemd manages, not delegated to uid ${euid}`
      : `our cgroup ${path} is not owned by uid ${euid}`
  }
  if (!systemd) return null
  return `systemd manages our cgroup ${path}; a delegation to a root service (trusted.delegate) cannot be read here, so it is left to systemd`
}

/** In a cgroup namespace of our own (a container's), its cgroups are its own to make. */
function ownCgroupNamespace(): boolean {
  try {
    return statSync('/proc/self/ns/cgroup').ino !== INITIAL_CGROUP_NS_INO
  } catch {
    return false // no namespaces (or no /proc): not one of our own
  }
}

/** The mount point of the cgroup2 filesystem as this process sees it, or null. */
export function cgroup2Mount(): string | null {
  let info: string
  try {
    info = readFileSync('/proc/self/mountinfo', 'utf8')
  } catch {
    return null
  }
  for (const line of info.split('\n')) {
    // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS"
    const sep = line.indexOf(' - ')
    if (sep < 0 || !line.slice(sep + 3).startsWith('cgroup2 ')) continue
    const fields = line.slice(0, sep).split(' ')
    // Only a mount of the hierarchy's root (as our namespace sees it): a bind mount of a subtree
    // would put our cgroup's path somewhere else.
    if (fields[3] === '/' && fields[4]) return unescapeMount(fields[4])
  }
  return null
}

/** Our cgroup's path in the v2 hierarchy (the `0::` line of /proc/self/cgroup), or null. */
export function ownCgroup(): string | null {
  try {
    const line = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((l) => l.startsWith('0::'))
    // " (deleted)" when our cgroup was removed under us: nothing to make children in.
    return line && !line.endsWith(' (deleted)') ? line.slice(3) : null
  } catch {
    return null
  }
}

/** mountinfo escapes space, tab, newline and backslash as octal (\040...). */
function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)))
}

function kernelAtLeast(major: number, minor: number): boolean {
  const m = /^(\d+)\.(\d+)/.exec(release())
  if (!m) return false
  const [a, b] = [Number(m[1]), Number(m[2])]
  return a > major || (a === major && b >= minor)
}

function exists(path: string): boolean {
  try {
    statSync(path)
    return true
  } catch {
    return false
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}
