/**
 * The public capabilities(): the addon's and platform's (ground/native.ts), plus `cgroup`, where
 * spawn({ cgroup: true }) can contain a child (where.ts). Computed on the first call, not at require.
 */
import { type Capabilities as BaseCapabilities, nativeCapabilities as baseCapabilities } from '../../ground/native'
import { type CgroupCapability, cgroupCapability } from './where'
import { type PidNamespaceCapability, pidNamespaceCapability } from '../pid-namespace'

export type { CgroupCapability } from './where'
export type { PidNamespaceCapability } from '../pid-namespace'

export interface Capabilities extends BaseCapabilities {
  /** Linux: whether spawn({ cgroup: true }) can put a child in a cgroup of its own, where, and if not, why. */
  cgroup: CgroupCapability
  /**
   * Linux: whether spawn({ pidNamespace: true }) works here (root, or an unprivileged user namespace
   * the system allows), by which route, and if not, why. Tried once, on the first read (a few ms).
   */
  readonly pidNamespace: PidNamespaceCapability
}

/** What this platform and build support: `{ native, pidfd, pdeathsig, subreaper, kqueue, parentWatch, cgroup, pidNamespace, ... }`. */
export function capabilities(): Capabilities {
  const base = baseCapabilities()
  const where = cgroupCapability()
  // The kernel's yes is not enough: only the exec helper can join the cgroup before the exec.
  const cgroup = where.available && !base.execHelper
    ? { available: false, reason: 'the exec helper (reapkit-exec) is missing: nothing can join a cgroup before the exec' }
    : where
  const caps = { ...base, cgroup } as Capabilities
  // A getter: the probe starts a process, so only a caller who asks pays for it.
  Object.defineProperty(caps, 'pidNamespace', { get: pidNamespaceCapability, enumerable: true })
  return caps
}
