/**
 * spawn()'s cgroup part (where.ts, make.ts: what `cgroup: true` needs), loaded when a spawn first
 * asks for a cgroup. The shape of every file here: see ./containers.ts.
 */
import * as part from '../cgroup/spawn-side'

export default function cgroupPart(): typeof part {
  return part
}
