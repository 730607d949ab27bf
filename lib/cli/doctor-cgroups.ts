/**
 * `reapkit doctor`'s words for cgroups (./doctor.ts prints them): the leftover cgroups of reapkit's
 * spawn({ cgroup: true }) with their members, those that cannot be judged here, other users' (listed
 * by their word, never stopped), and after --stop what became of each.
 */
import { section } from './section'
import type { CgroupReport, LeakedCgroup, StoppedCgroup } from '../index'

function entry(c: LeakedCgroup): string {
  const n = c.members.length + c.outside
  const outside = c.outside > 0 ? `, ${c.outside} outside this PID namespace` : ''
  let out = `  ${c.path}  (uid ${c.uid}; ${c.populated ? `${n} process${n === 1 ? '' : 'es'}${outside}` : 'empty'})\n     ${c.why}\n`
  for (const m of c.members) out += `     ${m.pid}  ${m.command.length > 70 ? `${m.command.slice(0, 69)}…` : m.command}\n`
  return out
}

/** The listing's cgroup part (empty when there is nothing to say). */
export function humanCgroups(report: CgroupReport): string {
  let out =
    section('Leftover cgroups: their maker (a reapkit host) is gone; --stop ends them with cgroup.kill.', report.leaked, entry) +
    section('Cgroups whose maker cannot be judged here (another PID namespace, host or boot; --stop leaves them alone):', report.foreign, entry) +
    section("Other users' leftover cgroups, by their own names (--stop leaves them alone):", report.otherUsers, entry)
  if (report.truncated) out += 'The cgroup walk stopped at its bound: not every cgroup was seen.\n'
  if (report.unreadable > 0) {
    const n = report.unreadable
    out += `${n} cgroup director${n === 1 ? 'y' : 'ies'} could not be read (another user's, permission denied): skipped; what is in ${n === 1 ? 'it' : 'them'} was not seen.\n`
  }
  return out
}

/** One line per cgroup --stop ended (or did not). */
export function stoppedCgroupLines(results: StoppedCgroup[]): string {
  let out = ''
  for (const r of results) {
    const what = { gone: 'gone', survived: 'STILL POPULATED', 'not-ours': 'NOT TOUCHED (it has another owner now)', failed: 'FAILED' }[r.state]
    out += `stopped cgroup ${r.path}: ${r.killed ? `cgroup.kill to ${r.members} process${r.members === 1 ? '' : 'es'}, ` : ''}${what}${r.removed ? ', removed' : ''}${r.error ? `: ${r.error}` : ''}\n`
  }
  return out
}
