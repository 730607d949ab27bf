/**
 * The reapkit cgroups on this machine, found by walking the cgroup v2 hierarchy (where.ts's mount):
 * every directory whose name reapkit gives (name.ts), with what identifies it for a later act (its
 * inode, the kernel's cgroup id, never reused while it exists; its owner uid, whose it is) and its
 * members. Stateless and read-only: judging (judge.ts) and ending (end.ts) are apart.
 *
 * The walk is bounded (a machine with a runaway number of cgroups costs a bounded pass, and says so)
 * and reads directories only: cgroupfs holds control files and child cgroups, no links. A directory
 * it may not read or stat (EACCES, EPERM: another user's delegated subtree, 0744 or 0700) is
 * skipped and counted, never thrown: one user's mode bits must not blind everyone else's walk.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { type CgroupOwner, isOwnName, parseCgroupName } from './name'
import { cgroup2Mount } from './where'

export interface FoundCgroup {
  /** Its directory. */
  path: string
  /** The last component of `path`. */
  name: string
  /** Who its name says made it. */
  owner: CgroupOwner
  /** Its directory's inode: the kernel's cgroup id, never reused while it exists. */
  id: bigint
  /** Its directory's owner: whose cgroup it is (the maker's uid, or whom it was delegated to). */
  uid: number
  /** The reapkit cgroup it is inside, when it is nested in one (a nested reapkit made it). */
  inside: string | null
}

export interface CgroupListing {
  /** The v2 mount walked, or null when there is none. */
  mount: string | null
  found: FoundCgroup[]
  /** How many directories the walk read. */
  visited: number
  /** True when the walk stopped at its bound: `found` is not everything. */
  truncated: boolean
  /** How many directories could not be read or stat'ed (EACCES, EPERM): what is in them was not seen. */
  unreadable: number
}

/** How many directories a walk reads at most. */
export const LIST_MAX_DIRS = 100_000

const isGoneCode = (err: unknown): boolean => ['ENOENT', 'ENODEV', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '')
const isDeniedCode = (err: unknown): boolean => ['EACCES', 'EPERM'].includes((err as NodeJS.ErrnoException).code ?? '')

/** Every reapkit cgroup under `root` (default: the whole v2 hierarchy). A directory that vanishes meanwhile is left out. */
export function listReapkitCgroups(options: { root?: string; maxDirs?: number } = {}): CgroupListing {
  const mount = options.root ?? cgroup2Mount()
  const maxDirs = options.maxDirs ?? LIST_MAX_DIRS
  if (mount === null) return { mount: null, found: [], visited: 0, truncated: false, unreadable: 0 }
  const found: FoundCgroup[] = []
  const todo: Array<{ dir: string; inside: string | null }> = [{ dir: mount, inside: null }]
  let visited = 0
  let unreadable = 0
  while (todo.length > 0) {
    if (visited >= maxDirs) return { mount, found, visited, truncated: true, unreadable }
    const { dir, inside } = todo.pop()!
    visited++
    let entries
    try {
      entries = readdirSync(dir, { withFileTypes: true })
    } catch (err) {
      if (isGoneCode(err)) continue
      if (!isDeniedCode(err)) throw err
      unreadable++
      continue
    }
    for (const e of entries) {
      if (!e.isDirectory()) continue
      const path = join(dir, e.name)
      const owner = parseCgroupName(e.name)
      if (owner === null) {
        todo.push({ dir: path, inside })
        continue
      }
      let st
      try {
        st = statSync(path, { bigint: true })
      } catch (err) {
        if (isGoneCode(err)) continue
        if (!isDeniedCode(err)) throw err
        unreadable++ // in a directory we may list but not search (0744): its name seen, nothing of it known
        continue
      }
      found.push({ path, name: e.name, owner, id: st.ino, uid: Number(st.uid), inside })
      todo.push({ dir: path, inside: path })
    }
  }
  return { mount, found, visited, truncated: false, unreadable }
}

/**
 * The cgroups this process made (any copy of the library in it, any thread: isOwnName), which
 * spawn() makes right under our own cgroup, `parent` (where.ts's path): one directory read.
 */
export function listOwnCgroups(parent: string): FoundCgroup[] {
  let entries
  try {
    entries = readdirSync(parent, { withFileTypes: true })
  } catch (err) {
    if (isGoneCode(err)) return []
    throw err
  }
  const found: FoundCgroup[] = []
  for (const e of entries) {
    if (!e.isDirectory() || !isOwnName(e.name)) continue
    const path = join(parent, e.name)
    try {
      const st = statSync(path, { bigint: true })
      found.push({ path, name: e.name, owner: parseCgroupName(e.name)!, id: st.ino, uid: Number(st.uid), inside: null })
    } catch (err) {
      if (!isGoneCode(err)) throw err
    }
  }
  return found
}

/**
 * Whether `path` is still the cgroup `found` listed: 'same' (its id, the inode, and its owner uid);
 * 'gone' when it was removed (whatever has its name now has another id, and is not it); 'other'
 * when it is there with another owner (chowned since: not the one judged).
 */
export function sameCgroup(found: Pick<FoundCgroup, 'path' | 'id' | 'uid'>): 'same' | 'gone' | 'other' {
  try {
    const st = statSync(found.path, { bigint: true })
    if (st.ino !== found.id) return 'gone'
    return Number(st.uid) === found.uid ? 'same' : 'other'
  } catch (err) {
    if (isGoneCode(err)) return 'gone'
    throw err
  }
}

/** `cgroup.events` of `path`: 'populated', 'empty', or 'gone' (removed). Any other error throws (unknown is never empty). */
export function populatedState(path: string): 'populated' | 'empty' | 'gone' {
  try {
    return /^populated 1$/m.test(readFileSync(join(path, 'cgroup.events'), 'latin1')) ? 'populated' : 'empty'
  } catch (err) {
    if (isGoneCode(err)) return 'gone'
    throw err
  }
}

/** The cgroup and every cgroup below it, each before its children; one removed meanwhile is left out ([] when the top is gone). */
export function subtreeOf(path: string): string[] {
  const dirs: string[] = []
  const todo = [path]
  while (todo.length > 0) {
    const dir = todo.pop()!
    let entries
    try {
      entries = readdirSync(dir, { withFileTypes: true })
    } catch (err) {
      if (isGoneCode(err)) continue
      throw err
    }
    dirs.push(dir)
    for (const e of entries) if (e.isDirectory()) todo.push(join(dir, e.name))
  }
  return dirs
}

/** The pids in the cgroup now, its descendants' included ([] once it is gone). */
export function membersOf(path: string): number[] {
  const pids: number[] = []
  for (const dir of subtreeOf(path)) {
    let text: string
    try {
      text = readFileSync(join(dir, 'cgroup.procs'), 'latin1')
    } catch (err) {
      if (isGoneCode(err)) continue
      throw err
    }
    for (const line of text.split('\n')) if (line !== '') pids.push(Number(line))
  }
  return pids
}
