/**
 * A previous incarnation's cgroups (spawn({ cgroup: true }) in the process that wrote the state
 * file): found at start by their names, which carry their maker's pid and start time, the very pair
 * the file records as its owner; ended once the predecessor's recorded processes have had their
 * graceful stop. A supervisor SIGKILLed with contained children leaves their escapees (a setsid
 * helper, a double-forked daemon) in those cgroups, out of any process group: only the cgroup
 * still holds them.
 *
 * The same proof as doctor's (policies/doctor/cgroups.ts), on top of the file's own trust: a
 * reapkit name; a directory of this process's own uid (a name is its writer's word); a maker that is
 * provably gone (mechanisms/cgroup/judge.ts: this host, boot and PID namespace; the constructor has
 * already refused a file whose writer runs). The end is `cgroup.kill`, exact (no pid that could be
 * recycled), then the kernel's `populated 0`, then the removal (mechanisms/cgroup/end.ts).
 *
 * Every cgroup of that process is ended, not only those of the supervisor that wrote this file: a
 * process that is gone stops nothing any more, and its cgroups hold nothing anyone else will end.
 * With onLeftovers 'adopt', a cgroup that holds an adopted process is kept (its process runs on,
 * adopted): only the others are ended.
 */
import { type Logger, logEvent } from '../../ground/logger'
import { endFoundCgroup, type EndedCgroup } from '../../mechanisms/cgroup/end'
import { cgroupOwnerVerdict } from '../../mechanisms/cgroup/judge'
import { type FoundCgroup, listReapkitCgroups, membersOf } from '../../mechanisms/cgroup/list'
import { cgroup2Mount } from '../../mechanisms/cgroup/where'

/** What the next incarnation did with one of its predecessor's cgroups (LeftoverReport.cgroups). */
export type LeftoverCgroup = EndedCgroup

/** The predecessor's cgroups: named for `owner` (pid and start time), ours by uid, their maker provably gone. */
export function findPredecessorCgroups(owner: { pid: number; start: string }, logger: Logger): FoundCgroup[] {
  if (process.platform !== 'linux' || cgroup2Mount() === null) return []
  const me = process.geteuid?.() ?? -1
  let listing
  try {
    listing = listReapkitCgroups()
  } catch (err) {
    logEvent(logger, 'warn', 'state.cgroups-unreadable', { error: (err as Error).message })
    return []
  }
  const found: FoundCgroup[] = []
  const taken = new Set<string>()
  for (const c of listing.found) {
    // Inside one already found: ended with it.
    if (c.inside !== null && taken.has(c.inside)) {
      taken.add(c.path)
      continue
    }
    if (c.owner.pid !== owner.pid || c.owner.startTime !== owner.start || c.uid !== me) continue
    const verdict = cgroupOwnerVerdict(c.owner)
    if (verdict.status !== 'gone') {
      logEvent(logger, 'warn', 'state.cgroup-not-judged', { path: c.path, status: verdict.status, why: verdict.why })
      continue
    }
    found.push(c)
    taken.add(c.path)
  }
  return found
}

/**
 * Ends the predecessor's cgroups found at start, except those holding a pid in `keep` (adopted);
 * one result each. Never rejects.
 */
export async function endPredecessorCgroups(found: readonly FoundCgroup[], keep: ReadonlySet<number>, logger: Logger): Promise<LeftoverCgroup[]> {
  const ending = found.filter((c) => {
    let members: number[] = []
    try {
      members = membersOf(c.path)
    } catch {
      // unreadable: ended (its maker is gone) unless it holds an adopted process, which cannot be told: kept
      return keep.size === 0
    }
    const held = members.some((p) => keep.has(p))
    if (held) logEvent(logger, 'info', 'state.cgroup-kept', { path: c.path, reason: 'holds an adopted process' })
    return !held
  })
  const results = await Promise.all(ending.map((c) => endFoundCgroup(c)))
  for (const r of results) logEvent(logger, r.state === 'gone' ? 'info' : 'warn', 'state.cgroup-ended', { ...r })
  return results
}
