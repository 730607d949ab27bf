/**
 * The name spawn() gives a child's cgroup (make.ts), and who it says made it. Stateless, so that
 * doctor, a Supervisor's next incarnation and reapkit/testing can read names without loading the
 * cgroups' bookkeeping:
 *
 *   reapkit-<hostname>_<boot id, 32 hex>_<pid namespace inode>_<pid>_<start time>_<thread>_<seq>
 *
 * hostname made safe (letters, digits, '.', '-' only, at most 63), '-' for a field that cannot be
 * read. '_' appears in no field, so the name splits on it.
 */
import { hostname } from 'node:os'
import { ownerOf } from '../container/owner'

export interface CgroupOwner {
  hostname: string
  bootId: string
  pidNamespace: string
  pid: number
  startTime: string
  thread: number
  seq: number
}

/** A hostname as a cgroup name carries it. */
export function safeHostname(name: string = hostname()): string {
  return name.replace(/[^A-Za-z0-9.-]/g, '-').slice(0, 63) || '-'
}

let ownerPrefix: string | undefined

/** This process's part of every name it gives, up to its pid and start time (read once: none of it changes while we run). */
export function ownNamePrefix(): string {
  if (ownerPrefix === undefined) {
    const o = ownerOf()
    const boot = o.bootId === '-' ? '-' : o.bootId.replace(/-/g, '')
    const ns = o.pidNamespace?.startsWith('pidns:') ? o.pidNamespace.slice(6) : '-'
    ownerPrefix = `reapkit-${safeHostname(o.hostname)}_${boot}_${ns}_${o.pid}_${o.startTime}`
  }
  return ownerPrefix
}

const NAME_RE = /^reapkit-([A-Za-z0-9.-]+)_([0-9a-f]{32}|-)_([0-9]+|-)_([0-9]+)_([0-9]+|-)_([0-9]+)_([0-9]+)$/

/** Who made the cgroup called `name` (its last path component), or null for a name reapkit did not give. */
export function parseCgroupName(name: string): CgroupOwner | null {
  const m = NAME_RE.exec(name)
  if (!m) return null
  const pid = Number(m[4])
  if (!Number.isSafeInteger(pid) || pid < 1) return null
  return { hostname: m[1]!, bootId: m[2]!, pidNamespace: m[3]!, pid, startTime: m[5]!, thread: Number(m[6]), seq: Number(m[7]) }
}

/** Whether this process made the cgroup called `name` (any copy of the library in it, any thread). */
export function isOwnName(name: string): boolean {
  return name.startsWith(`${ownNamePrefix()}_`) && parseCgroupName(name) !== null
}
