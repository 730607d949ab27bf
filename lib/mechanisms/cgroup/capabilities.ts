/**
 * The public capabilities(): the addon's and platform's (ground/native.ts), plus `cgroup`, where
 * spawn({ cgroup: true }) can contain a child (where.ts). Computed on the first call, not at require.
 */
import { type Capabilities as BaseCapabilities, nativeCapabilities as baseCapabilities } from '../../ground/native'
import { type CgroupCapability, cgroupCapability } from './where'

export type { CgroupCapability } from './where'

export interface Capabilities extends BaseCapabilities {
  /** Linux: whether spawn({ cgroup: true }) can put a child in a cgroup of its own, where, and if not, why. */
  cgroup: CgroupCapability
}

/** What this platform and build support: `{ native, pidfd, pdeathsig, subreaper, kqueue, parentWatch, cgroup, ... }`. */
export function capabilities(): Capabilities {
  const base = baseCapabilities()
  const where = cgroupCapability()
  // The kernel's yes is not enough: only the exec helper can join the cgroup before the exec.
  const cgroup = where.available && !base.execHelper
    ? { available: false, reason: 'the exec helper (reapkit-exec) is missing: nothing can join a cgroup before the exec' }
    : where
  return { ...base, cgroup }
}
