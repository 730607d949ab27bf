/**
 * A child's own cgroup: made by spawn() under ours (where.ts says where), joined by the exec helper
 * before it execs the target (native/exec_helper.c), and removed once it is empty.
 *
 * Its name says who made it (name.ts), as a container's owner label does (container/owner.ts), so
 * that a leftover can be judged later (doctor, a Supervisor's next incarnation: judge.ts) without
 * guessing. `thread` in it is the worker thread's id (0: the main thread), `seq` counts the children
 * of this process, through one counter every copy of the library in the thread shares (globalThis):
 * two copies (a second install, a bundle) never give the same name, nor do two threads, each with a
 * globalThis of its own. A name taken anyway (EEXIST) is skipped.
 *
 * Its identity is its directory's inode, the kernel's cgroup id, never reused while the cgroup
 * exists: recorded at mkdir, checked before the cgroup is listed, killed or removed. A cgroup
 * removed, or found to be another one at that path, is ours no more: it is forgotten, and every
 * later stop sees it gone (isCgroupRemoved) without touching the path.
 */
import { mkdirSync, readFileSync, rmdirSync, statSync, watch, writeFileSync, type FSWatcher } from 'node:fs'
import { join } from 'node:path'
import { systemError } from '../../ground/errors'
import { membersOf, subtreeOf } from './list'
import { ownNamePrefix } from './name'
import { cgroupCapability } from './where'

export { type CgroupOwner, parseCgroupName } from './name'

/** The counter every copy of the library in this thread shares (one globalThis per thread). */
const SEQ = Symbol.for('reapkit.cgroup.seq')
function nextSeq(): number {
  const g = globalThis as unknown as Record<symbol, { n: number } | undefined>
  const counter = (g[SEQ] ??= { n: 0 })
  return ++counter.n
}

let thread: number | undefined
function threadId(): number {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  thread ??= (require('node:worker_threads') as typeof import('node:worker_threads')).threadId
  return thread
}

/** The cgroups this copy made and still owns: path -> the cgroup id (its directory's inode). */
const made = new Map<string, bigint>()

/** For spawn(): why a child asked to be contained cannot be, or null when it can. */
export function whyUncontained(haveHelper: boolean, asOtherUser: boolean): string | null {
  const where = cgroupCapability()
  if (!where.available) return where.reason!
  if (!haveHelper) return 'the exec helper (reapkit-exec) is missing: nothing can join the cgroup before the exec'
  if (asOtherUser) return 'spawned as another user (uid/gid): Node spawns it without the exec helper'
  return null
}

/** How many taken names makeChildCgroup skips before it gives up (EEXIST). */
const NAME_TRIES = 16

/** Makes a new, empty cgroup for one child under `parent` (our own cgroup); throws a system error naming it. */
export function makeChildCgroup(parent: string): string {
  for (let tries = 1; ; tries++) {
    const path = join(parent, `${ownNamePrefix()}_${threadId()}_${nextSeq()}`)
    try {
      mkdirSync(path, { mode: 0o755 })
      made.set(path, statSync(path, { bigint: true }).ino)
      return path
    } catch (err) {
      const e = err as NodeJS.ErrnoException
      if (e.code === 'EEXIST' && tries < NAME_TRIES) continue // someone else's (or a leftover): the next name
      if (e.syscall !== 'mkdir') removeCgroupDir(path) // made, but its id unreadable: not one we could check
      throw systemError(e.code ?? 'EIO', 'mkdir', `cannot make the child's cgroup ${path}`, err)
    }
  }
}

/** True once the cgroup spawn() made at `path` is removed, or no longer there (never made by this copy: true). */
export function isCgroupRemoved(path: string): boolean {
  return !made.has(path)
}

/** What is at `path` now: 'ours' (the cgroup we made), 'gone' (removed, or another in its place), or why we cannot tell. */
function identity(path: string): 'ours' | 'gone' | Error {
  const id = made.get(path)
  if (id === undefined) return 'gone'
  try {
    if (statSync(path, { bigint: true }).ino === id) return 'ours'
  } catch (err) {
    if (!isGoneCode(err)) return err as Error
  }
  made.delete(path) // removed, by us or someone else: whatever has its name now is not ours
  return 'gone'
}

function isGoneCode(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code
  return code === 'ENOENT' || code === 'ENODEV' || code === 'ENOTDIR'
}

/**
 * What `cgroup.events` says now: 'populated' (a live process in it or below), 'empty', 'gone'
 * (removed, or another in its place), or the error that kept us from knowing (EMFILE...): never
 * read as empty.
 */
export function cgroupState(path: string): 'populated' | 'empty' | 'gone' | Error {
  const who = identity(path)
  if (who !== 'ours') return who
  try {
    return /^populated 1$/m.test(readFileSync(join(path, 'cgroup.events'), 'latin1')) ? 'populated' : 'empty'
  } catch (err) {
    if (!isGoneCode(err)) return err as Error
    made.delete(path) // removed under us
    return 'gone'
  }
}

/** Whether the cgroup may still hold a live process: true when `populated 1`, and when that cannot be read (unknown is not empty). */
export function cgroupPopulated(path: string): boolean {
  const state = cgroupState(path)
  return state === 'populated' || state instanceof Error
}

/**
 * The pids in the cgroup now, its descendants' included (the `cgroup.procs` of each: a child may
 * make cgroups inside its own, a nested reapkit does), or [] once it is removed (or another is in
 * its place).
 */
export function cgroupProcs(path: string): number[] {
  const who = identity(path)
  if (who instanceof Error) throw who
  if (who === 'gone') return []
  return membersOf(path)
}

/** `cgroup.kill` to the cgroup we made: true when written, false when it is gone; throws any other error. */
export function killCgroup(path: string): boolean {
  const who = identity(path)
  if (who instanceof Error) throw who
  if (who === 'gone') return false
  try {
    writeFileSync(join(path, 'cgroup.kill'), '1')
    return true
  } catch (err) {
    if (isGoneCode(err)) return false
    throw err
  }
}

/**
 * Removes the cgroup if it is empty, the cgroups its members made inside it first (deepest first):
 * true when it is gone (removed now, or before, or another is in its place).
 */
export function removeCgroup(path: string): boolean {
  // Nothing is removed while a process lives anywhere in it (`populated` covers the cgroups
  // inside): an empty inner cgroup may be one a live member is about to move into.
  const state = cgroupState(path)
  if (state === 'gone') return true
  if (state !== 'empty') return false
  let dirs: string[]
  try {
    dirs = subtreeOf(path)
  } catch {
    return false // cannot list what is inside: left for the next try, or doctor
  }
  // Each before its children: reversed, every child goes before its parent.
  for (const dir of dirs.reverse()) if (!removeCgroupDir(dir)) return false
  made.delete(path)
  return true
}

function removeCgroupDir(path: string): boolean {
  try {
    rmdirSync(path)
    return true
  } catch (err) {
    return isGoneCode(err)
  }
}

/** Cgroups waiting to empty before their removal (their watches keep no loop alive). */
const pending = new Map<string, FSWatcher>()
/** Cgroups a stop under way holds (how many stops): that stop removes it at its end, nobody before. */
const held = new Map<string, number>()

/** A stop takes the cgroup over: no removal until it lets go (its watch on cgroup.events needs the file). */
export function hold(path: string): void {
  forget(path)
  held.set(path, (held.get(path) ?? 0) + 1)
}

/** The stop is over; true when no other stop holds the cgroup (the caller then removes it). */
export function letGo(path: string): boolean {
  const n = (held.get(path) ?? 1) - 1
  if (n > 0) held.set(path, n)
  else held.delete(path)
  return n <= 0
}

/**
 * Removes the cgroup now if it is empty, else as soon as the kernel says it is (`populated 0` on
 * `cgroup.events`, an inotify event): the child has exited, but something it started still runs
 * in it (contained, for the next stop to end). The watch is unref'd: it does not keep this process
 * alive, and a cgroup still populated when we exit stays, named for doctor to judge.
 */
export function removeWhenEmpty(path: string): void {
  if (held.has(path) || pending.has(path) || removeCgroup(path)) return
  let watcher: FSWatcher
  try {
    watcher = watch(join(path, 'cgroup.events'), { persistent: false }, () => {
      if (!cgroupPopulated(path) && removeCgroup(path)) forget(path)
    })
  } catch {
    return // removed meanwhile, or no watch to be had: left for the next stop or doctor
  }
  watcher.on('error', () => forget(path))
  pending.set(path, watcher)
  // It may have emptied between the rmdir and the watch.
  if (!cgroupPopulated(path) && removeCgroup(path)) forget(path)
}

/** Stops waiting for `path` (a stop has taken it over, or it is gone). */
function forget(path: string): void {
  pending.get(path)?.close()
  pending.delete(path)
}

/** How long the exit backstop waits, at most, for the cgroups it killed to empty before it removes them. */
const SYNC_REMOVE_MS = 100

/**
 * For an exit backstop (no event loop left), step one: `cgroup.kill`, no wait. True when the kill
 * was sent; an empty cgroup is removed at once instead. removeKilledSync then waits for them all.
 */
export function killCgroupNow(path: string): boolean {
  if (!cgroupPopulated(path)) {
    removeCgroup(path)
    return false
  }
  try {
    return killCgroup(path)
  } catch {
    return false // not ours to write any more
  }
}

/**
 * Step two, once every cgroup.kill is sent: one shared bounded wait (1 ms sleeps, not a spin) for
 * them to empty, then their removal. A cgroup that has not emptied in time stays, named for doctor.
 */
export function removeKilledSync(paths: readonly string[]): void {
  let left = paths.filter((p) => cgroupPopulated(p) || !removeCgroup(p))
  const nap = new Int32Array(new SharedArrayBuffer(4))
  const deadline = performance.now() + SYNC_REMOVE_MS
  while (left.length > 0 && performance.now() < deadline) {
    Atomics.wait(nap, 0, 0, 1)
    left = left.filter((p) => cgroupPopulated(p) || !removeCgroup(p))
  }
}

/** The cgroup id (its directory's inode) of a cgroup this copy made and still owns, or undefined. */
export function madeCgroupId(path: string): bigint | undefined {
  return made.get(path)
}
