/**
 * Process-group membership: which live processes are in a group right now. kill(-pgid, 0) is no
 * answer (it succeeds while only zombies remain), so this reads each member's state.
 */
import { spawnSync } from 'node:child_process'
import { binding } from './native'
import { validatePid } from './validate'

/** Pids of the live (not zombie) members of process group `pgid`. */
export function groupMembers(pgid: number): number[] {
  const g = validatePid(pgid, 'pgid')
  if (binding && process.platform === 'linux') return binding.groupMembers(g)
  // macOS / BSD (or no addon): one `ps` listing. Slower, but only used on the stop path.
  const r = spawnSync('ps', ['-A', '-o', 'pid=,pgid=,stat='], { encoding: 'utf8', timeout: 10_000 })
  if (r.status !== 0) return []
  const members: number[] = []
  for (const line of r.stdout.split('\n')) {
    const [pid, group, state] = line.trim().split(/\s+/)
    if (Number(group) === g && state && !state.startsWith('Z')) members.push(Number(pid))
  }
  return members
}
