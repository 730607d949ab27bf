/**
 * findLeakedCgroups() / stopLeakedCgroups(): the cgroups spawn({ cgroup: true }) made whose maker is
 * gone (its host was SIGKILLed before it could stop them), with their members, and their end.
 *
 * Found exactly, never by a guess:
 * - reapkit's only: a cgroup v2 directory with the name spawn() gives (mechanisms/cgroup/name.ts);
 * - whose: its directory's owner uid as the kernel shows it. Only a cgroup of doctor's own uid is
 *   judged by its name and stopped: a name is its writer's word, and root acts on nothing another
 *   user wrote. With `allUsers` (root), another user's leftovers are listed apart, by their word,
 *   never stopped (that user's own `reapkit doctor --stop` does it, with that user's rights);
 * - its maker gone, by mechanisms/cgroup/judge.ts (this host, this boot, this PID namespace, and the
 *   pid no longer runs or runs with another start time). A maker alive is never listed; one that
 *   cannot be judged from here (another PID namespace...) is listed apart, never stopped.
 * A leftover inside a leftover (a nested reapkit's) goes with the outer one: listed and ended once.
 *
 * The stop is `cgroup.kill` (mechanisms/cgroup/end.ts): exact, every member at once, escapees and
 * members forked meanwhile included, no pid that could have been recycled since the listing; then
 * the kernel's `populated 0` (an inotify event), then the cgroup's removal.
 */
import { typeError } from '../../ground/errors'
import { validateMs, validateOptions } from '../../ground/validate'
import { endFoundCgroup, type EndedCgroup } from '../../mechanisms/cgroup/end'
import { cgroupOwnerVerdict } from '../../mechanisms/cgroup/judge'
import { type FoundCgroup, listReapkitCgroups, membersOf, populatedState } from '../../mechanisms/cgroup/list'
import type { CgroupOwner } from '../../mechanisms/cgroup/name'
import { cgroup2Mount } from '../../mechanisms/cgroup/where'
import { processRow } from '../../mechanisms/proctable'

export interface CgroupMember {
  pid: number
  /** Start time (clock ticks since boot), empty when it exited while being read. */
  start: string
  state: string
  command: string
}

export interface LeakedCgroup {
  /** Its directory in the v2 hierarchy. */
  path: string
  name: string
  /** Its directory's owner. */
  uid: number
  /** Who its name says made it. */
  owner: CgroupOwner
  /** True when the kernel says a live process is in it (or below it). */
  populated: boolean
  /** Its processes (and those of the cgroups inside it), as listed. */
  members: CgroupMember[]
  /** Members this PID namespace cannot see (the kernel lists them as pid 0 here): counted, not named. */
  outside: number
  /** Why it is listed. */
  why: string
}

export interface CgroupReport {
  /** Whether a cgroup v2 hierarchy was there to walk; `reason` says why not. */
  checked: boolean
  reason?: string
  /** Doctor's own uid's, their maker gone: what `--stop` ends. */
  leaked: LeakedCgroup[]
  /** Doctor's own uid's, whose maker cannot be judged from here: listed, never stopped. */
  foreign: LeakedCgroup[]
  /** With allUsers: other users' whose name says their maker is gone (their word): listed, never stopped. */
  otherUsers: LeakedCgroup[]
  /** The walk stopped at its bound (a runaway number of cgroups): not everything was seen. */
  truncated: boolean
  /** How many cgroup directories could not be read or stat'ed (another user's, EACCES/EPERM): skipped, not seen. */
  unreadable: number
}

export interface FindLeakedCgroupsOptions {
  /** Also list other users' leftovers (root), apart and never stopped. Default false. */
  allUsers?: boolean
}

export interface StopCgroupsOptions {
  /** How long to wait for the kernel's `populated 0` after `cgroup.kill`. Default 5000. */
  confirmMs?: number
}

/** What one cgroup's stop did (`cgroup.kill`, the kernel's word, the removal). */
export type StoppedCgroup = EndedCgroup

/** The identities of the cgroups a report listed, kept out of the JSON: only these are ever ended. */
const listedAs = new WeakMap<LeakedCgroup, FoundCgroup>()

function member(pid: number): CgroupMember {
  const row = processRow(pid)
  return row ? { pid, start: row.start, state: row.state, command: row.command } : { pid, start: '', state: 'gone', command: '' }
}

function describe(found: FoundCgroup, why: string): LeakedCgroup {
  let pids: number[] = []
  let populated = true // unreadable is never read as empty
  try {
    pids = membersOf(found.path)
    populated = populatedState(found.path) === 'populated'
  } catch {
    // removed or unreadable meanwhile: listed as found
  }
  const visible = pids.filter((p) => p > 0)
  const entry: LeakedCgroup = { path: found.path, name: found.name, uid: found.uid, owner: found.owner, populated, members: visible.map(member), outside: pids.length - visible.length, why }
  listedAs.set(entry, found)
  return entry
}

/** Lists the leftover cgroups (see the file's comment). Never signals, never writes. */
export async function findLeakedCgroups(options: FindLeakedCgroupsOptions = {}): Promise<CgroupReport> {
  options = validateOptions(options)
  if (options.allUsers !== undefined && typeof options.allUsers !== 'boolean') throw typeError('ERR_INVALID_ARG_TYPE', 'The "allUsers" option must be a boolean')
  const report: CgroupReport = { checked: false, leaked: [], foreign: [], otherUsers: [], truncated: false, unreadable: 0 }
  if (process.platform !== 'linux') return { ...report, reason: `cgroups are Linux's (this is ${process.platform})` }
  if (cgroup2Mount() === null) return { ...report, reason: 'no cgroup v2 hierarchy is mounted' }
  const listing = listReapkitCgroups()
  const me = process.geteuid?.() ?? -1
  // Leftovers found so far (and those inside them): a cgroup inside one goes with it.
  const covered = new Set<string>()
  for (const found of listing.found) {
    if (found.inside !== null && covered.has(found.inside)) {
      covered.add(found.path)
      continue
    }
    const verdict = cgroupOwnerVerdict(found.owner)
    if (verdict.status === 'alive') continue
    if (found.uid !== me) {
      if (options.allUsers === true && verdict.status === 'gone') {
        report.otherUsers.push(describe(found, `${verdict.why}, says uid ${found.uid}'s cgroup's name (that user's word): not stopped by doctor as uid ${me}; run \`reapkit doctor --stop\` as uid ${found.uid}`))
        covered.add(found.path)
      }
      continue
    }
    ;(verdict.status === 'gone' ? report.leaked : report.foreign).push(describe(found, verdict.why))
    if (verdict.status === 'gone') covered.add(found.path)
  }
  return { ...report, checked: true, truncated: listing.truncated, unreadable: listing.unreadable }
}

/** Ends one leaked cgroup of a report (`cgroup.kill`, confirmed gone, removed). Never rejects once its argument is read. */
export async function stopLeakedCgroup(c: LeakedCgroup, options: StopCgroupsOptions = {}): Promise<StoppedCgroup> {
  options = validateOptions(options)
  const confirmMs = validateMs(options.confirmMs, 'confirmMs') ?? 5000
  const found = listedAs.get(c)
  if (found === undefined) throw typeError('ERR_INVALID_ARG_TYPE', 'stopLeakedCgroup() takes a cgroup of a findLeakedCgroups() report (not a copy: its identity is not in a copy)')
  // Only doctor's own uid's: another user's name is never acted on, whatever a caller passes.
  const me = process.geteuid?.() ?? -1
  if (found.uid !== me) return { path: c.path, members: 0, killed: false, state: 'not-ours', removed: false, error: `uid ${found.uid}'s cgroup: not ended as uid ${me}` }
  return endFoundCgroup(found, { confirmMs })
}

/** Ends every leaked cgroup of a report, all at once; `foreign` and `otherUsers` are never touched. */
export async function stopLeakedCgroups(report: Pick<CgroupReport, 'leaked'>, options: StopCgroupsOptions = {}): Promise<StoppedCgroup[]> {
  if (!Array.isArray(report?.leaked)) throw typeError('ERR_INVALID_ARG_TYPE', 'stopLeakedCgroups() takes a findLeakedCgroups() report')
  return Promise.all(report.leaked.map((c) => stopLeakedCgroup(c, options)))
}
