/**
 * Process-group membership: which live processes are in a group right now. kill(-pgid, 0) is no
 * answer (it succeeds while only zombies remain), so this reads each member's state.
 */
import { nativeBinding, requirePosixBinding } from '../ground/native'
import { validatePid } from '../ground/validate'

/** Every live process as pgid -> pids, from one scan. Throws if the listing fails. */
export function scanGroups(): Map<number, number[]> {
  if (process.platform === 'win32') requirePosixBinding('getpgid', 'A process group')
  const table = new Map<number, number[]>()
  const add = (pid: number, pgid: number): void => {
    const list = table.get(pgid)
    if (list) list.push(pid)
    else table.set(pgid, [pid])
  }
  const binding = nativeBinding()
  if (binding && process.platform === 'linux') {
    const pairs = binding.groupTable() as Int32Array | undefined
    // Nothing while this environment is torn down (a worker ending): no listing, never "nobody".
    if (pairs === undefined) throw new Error('the process table could not be read: this environment is being torn down')
    for (let i = 0; i + 1 < pairs.length; i += 2) add(pairs[i]!, pairs[i + 1]!)
    return table
  }
  // macOS / BSD (or no addon): one `ps` listing. Slower, but only used on the stop path.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { spawnSync } = require('node:child_process') as typeof import('node:child_process') // on first use only
  const r = spawnSync('ps', ['-A', '-o', 'pid=,pgid=,stat='], { encoding: 'utf8', timeout: 10_000 })
  // A listing that failed is not an empty group: say so, never "nobody is left".
  if (r.error) throw r.error
  if (r.status !== 0) throw new Error(`ps failed with status ${r.status}: ${r.stderr.trim()}`)
  for (const line of r.stdout.split('\n')) {
    const [pid, group, state] = line.trim().split(/\s+/)
    if (state && !state.startsWith('Z')) add(Number(pid), Number(group))
  }
  return table
}

/** Pids of the live (not zombie) members of process group `pgid`, now (synchronous). */
export function groupMembers(pgid: number): number[] {
  const g = validatePid(pgid, 'pgid')
  if (process.platform === 'win32') requirePosixBinding('getpgid', 'A process group')
  const binding = nativeBinding()
  if (binding && process.platform === 'linux') {
    const members = binding.groupMembers(g) as number[] | undefined
    if (members === undefined) throw new Error('the process table could not be read: this environment is being torn down')
    return members
  }
  return scanGroups().get(g) ?? []
}

/** One listing of a group, and which scan of the process table it came from. */
export interface GroupListing {
  members: number[]
  /** Increases with every scan: listings with the same number were read from the same scan. */
  scan: number
}

let waiting: Array<{ pgid: number; resolve(listing: GroupListing): void; reject(err: unknown): void }> = []
let scheduled = false
let scans = 0

/**
 * The same answer as groupMembers(), from a scan taken after the call: all the calls made before
 * that scan starts share it. Stopping hundreds of groups at once then costs one scan of the
 * process table per round instead of one per group.
 */
export function groupMembersSoon(pgid: number): Promise<number[]> {
  return groupListingSoon(pgid).then((listing) => listing.members)
}

/**
 * groupMembersSoon() with the scan's number. The scan and the resolution of every listing it
 * answers happen in one check-phase callback, so a caller that looks at a child's state in its
 * continuation sees the state the scan was taken in (libuv reaps in the poll phase, never between).
 */
export function groupListingSoon(pgid: number): Promise<GroupListing> {
  const g = validatePid(pgid, 'pgid')
  return new Promise((resolve, reject) => {
    waiting.push({ pgid: g, resolve, reject })
    if (scheduled) return
    scheduled = true
    setImmediate(() => {
      const batch = waiting
      waiting = []
      scheduled = false
      let table: Map<number, number[]>
      const scan = ++scans
      try {
        table = scanGroups()
      } catch (err) {
        for (const w of batch) w.reject(err) // e.g. EMFILE: unknown, not empty
        return
      }
      for (const w of batch) w.resolve({ members: table.get(w.pgid) ?? [], scan })
    })
  })
}
