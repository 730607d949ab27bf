/**
 * Ends a cgroup found by a listing (list.ts) whose maker is gone: `cgroup.kill`, then the kernel's
 * word that it is empty, then its removal. For doctor's --stop, a Supervisor's next incarnation and
 * reapkit/testing's leak guard: none of them made it in this process, so make.ts's bookkeeping
 * (which only knows its own) is not used.
 *
 * Exact, with no pid race: `cgroup.kill` kills every member the kernel holds in it and below it at
 * the moment of the write, one forked meanwhile included, and names no pid. The only question is
 * whether the path still names the cgroup that was listed: its id (inode, never reused while it
 * exists) and owner uid are checked before `cgroup.kill` is opened and again after, and the write
 * goes through the descriptor opened in between. A cgroup removed meanwhile is 'gone' (whatever
 * took its name since has another id and is never touched); one whose owner changed is
 * 'not-ours', untouched.
 *
 * Gone means `cgroup.events` says `populated 0`, observed by inotify on that file (fs.watch), never
 * a poll; the wait is bounded. Then the cgroup is removed, the cgroups inside it first.
 */
import { closeSync, constants, openSync, rmdirSync, watch, writeSync } from 'node:fs'
import { join } from 'node:path'
import { type FoundCgroup, membersOf, populatedState, sameCgroup, subtreeOf } from './list'

export interface EndedCgroup {
  path: string
  /** How many processes were in it (and below it) when it was ended. */
  members: number
  /** True when `cgroup.kill` was written. */
  killed: boolean
  /**
   * 'gone': the kernel said no live member is left (or the cgroup was already removed);
   * 'survived': members were still there at the bound; 'not-ours': it has another owner now (not
   * the one judged): not touched; 'failed': it could not be read or written (`error`).
   */
  state: 'gone' | 'survived' | 'not-ours' | 'failed'
  /** True when it was removed after (or was already). */
  removed: boolean
  error?: string
}

/** How long end() waits for the kernel's `populated 0` by default. */
export const END_CONFIRM_MS_DEFAULT = 5000

/** `cgroup.kill`, through a descriptor opened between two identity checks: 'killed', or why not. */
function killExactly(found: FoundCgroup): 'killed' | 'gone' | 'other' {
  const before = sameCgroup(found)
  if (before !== 'same') return before
  let fd: number
  try {
    fd = openSync(join(found.path, 'cgroup.kill'), constants.O_WRONLY)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone'
    throw err
  }
  try {
    // Still the same after the open: the descriptor is that cgroup's (a removed cgroup never comes back under its id).
    const after = sameCgroup(found)
    if (after !== 'same') return after
    writeSync(fd, '1')
    return 'killed'
  } finally {
    closeSync(fd)
  }
}

/** Resolves true once `cgroup.events` says the cgroup is empty (or it is gone), false at the bound. */
function emptied(path: string, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    let done = false
    let timer: NodeJS.Timeout | undefined
    let watcher: ReturnType<typeof watch> | undefined
    const finish = (value: boolean): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      watcher?.close()
      resolve(value)
    }
    const look = (): void => {
      try {
        if (populatedState(path) !== 'populated') finish(true)
      } catch {
        // unreadable for a moment: the next event, or the bound
      }
    }
    try {
      watcher = watch(join(path, 'cgroup.events'), { persistent: false }, look)
      watcher.on('error', () => look())
    } catch {
      // removed meanwhile (or no watch to be had): the look below says which
    }
    timer = setTimeout(() => finish(false), ms)
    look() // it may have emptied before the watch began
  })
}

/** Removes the cgroup and those inside it (deepest first) once empty: true when it is gone. */
function removeTree(path: string): boolean {
  let dirs: string[]
  try {
    dirs = subtreeOf(path)
  } catch {
    return false
  }
  for (const dir of dirs.reverse()) {
    try {
      rmdirSync(dir)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return false
    }
  }
  return true
}

/** Ends one found cgroup (see the file's comment). Never rejects: the result says what is known. */
export async function endFoundCgroup(found: FoundCgroup, options: { confirmMs?: number } = {}): Promise<EndedCgroup> {
  const confirmMs = options.confirmMs ?? END_CONFIRM_MS_DEFAULT
  const base = { path: found.path, members: 0, killed: false }
  try {
    const who = sameCgroup(found)
    if (who === 'gone') return { ...base, state: 'gone', removed: true }
    if (who === 'other') return { ...base, state: 'not-ours', removed: false }
    const members = membersOf(found.path).length
    let killed = false
    if (populatedState(found.path) === 'populated') {
      const k = killExactly(found)
      if (k === 'gone') return { ...base, members, state: 'gone', removed: true }
      if (k === 'other') return { ...base, members, state: 'not-ours', removed: false }
      killed = true
    }
    const empty = await emptied(found.path, confirmMs)
    if (!empty) return { ...base, members, killed, state: 'survived', removed: false }
    // Removed only while it is still the one listed: an empty cgroup of another id is not ours to remove.
    const now = sameCgroup(found)
    return { ...base, members, killed, state: 'gone', removed: now === 'gone' || (now === 'same' && removeTree(found.path)) }
  } catch (err) {
    return { ...base, state: 'failed', removed: false, error: (err as Error).message }
  }
}
