/**
 * `reapkit doctor`'s zombies, in words: one line, however many. A zombie is a process that has
 * exited and waits for its parent to read its status: no server, no memory, nothing to stop (a
 * signal does nothing to it); it goes when its parent reaps it or exits. As root on a busy machine
 * every user's are listed (125 zombies were ~250 lines before the verdict), so the line counts them
 * by parent, the ones with most first; `--json` still lists each.
 */
import type { OrphanProcess } from '../policies/doctor/doctor'

/** How many parents are named; the rest are counted. */
const PARENTS_SHOWN = 3

export function zombieLine(zombies: readonly OrphanProcess[]): string {
  if (zombies.length === 0) return ''
  const byParent = new Map<number, number>()
  for (const z of zombies) byParent.set(z.ppid, (byParent.get(z.ppid) ?? 0) + 1)
  const parents = [...byParent].sort((a, b) => b[1] - a[1] || a[0] - b[0])
  const shown = parents.slice(0, PARENTS_SHOWN).map(([ppid, n]) => `${n} of pid ${ppid}`)
  if (parents.length > PARENTS_SHOWN) shown.push(`${parents.length - PARENTS_SHOWN} more parent${parents.length - PARENTS_SHOWN === 1 ? '' : 's'}`)
  const n = zombies.length
  return `  ${n} zombie${n === 1 ? '' : 's'} (exited, not yet reaped by ${parents.length === 1 ? 'its living parent' : 'their living parents'}: ${shown.join(', ')}): not servers, --stop leaves them; they go when their parents reap them or exit (--json lists each)\n`
}
