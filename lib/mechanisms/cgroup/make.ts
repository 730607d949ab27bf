/**
 * A child's own cgroup: made by spawn() under ours (where.ts says where), joined by the exec helper
 * before it execs the target (native/exec_helper.c), and removed once it is empty.
 *
 * Its name says who made it, as a container's owner label does (container/owner.ts), so that a
 * leftover can be judged later (by doctor) without guessing:
 *
 *   reapkit-<hostname>_<boot id, 32 hex>_<pid namespace inode>_<pid>_<start time>_<seq>
 *
 * hostname made safe (letters, digits, '.', '-' only, at most 63), '-' for a field that cannot be
 * read; `seq` counts this process's children. '_' appears in no field, so the name splits on it.
 */
import { mkdirSync, readFileSync, rmdirSync, watch, writeFileSync, type FSWatcher } from 'node:fs'
import { join } from 'node:path'
import { systemError } from '../../ground/errors'
import { ownerOf } from '../container/owner'
import { cgroupCapability } from './where'

export interface CgroupOwner {
  hostname: string
  bootId: string
  pidNamespace: string
  pid: number
  startTime: string
  seq: number
}

let ownerPrefix: string | undefined
let seq = 0

/** This process's part of every name it gives (read once: none of it changes while we run). */
function prefix(): string {
  if (ownerPrefix === undefined) {
    const o = ownerOf()
    const host = o.hostname.replace(/[^A-Za-z0-9.-]/g, '-').slice(0, 63) || '-'
    const boot = o.bootId === '-' ? '-' : o.bootId.replace(/-/g, '')
    const ns = o.pidNamespace?.startsWith('pidns:') ? o.pidNamespace.slice(6) : '-'
    ownerPrefix = `reapkit-${host}_${boot}_${ns}_${o.pid}_${o.startTime}`
  }
  return ownerPrefix
}

/** Who made the cgroup called `name` (its last path component), or null for a name reapkit did not give. */
export function parseCgroupName(name: string): CgroupOwner | null {
  const m = /^reapkit-([A-Za-z0-9.-]+)_([0-9a-f]{32}|-)_([0-9]+|-)_([0-9]+)_([0-9]+|-)_([0-9]+)$/.exec(name)
  if (!m) return null
  return { hostname: m[1]!, bootId: m[2]!, pidNamespace: m[3]!, pid: Number(m[4]), startTime: m[5]!, seq: Number(m[6]) }
}

/** For spawn(): why a child asked to be contained cannot be, or null when it can. */
export function whyUncontained(haveHelper: boolean, asOtherUser: boolean): string | null {
  const where = cgroupCapability()
  if (!where.available) return where.reason!
  if (!haveHelper) return 'the exec helper (reapkit-exec) is missing: nothing can join the cgroup before the exec'
  if (asOtherUser) return 'spawned as another user (uid/gid): Node spawns it without the exec helper'
  return null
}

/** Makes a new, empty cgroup for one child under `parent` (our own cgroup); throws a system error naming it. */
export function makeChildCgroup(parent: string): string {
  const path = join(parent, `${prefix()}_${++seq}`)
  try {
    mkdirSync(path, { mode: 0o755 })
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    throw systemError(e.code ?? 'EIO', 'mkdir', `cannot make the child's cgroup ${path}`, err)
  }
  return path
}

/** Whether the cgroup still holds a live process (`populated 1`); false once it is gone or removed. */
export function cgroupPopulated(path: string): boolean {
  try {
    return /^populated 1$/m.test(readFileSync(join(path, 'cgroup.events'), 'latin1'))
  } catch {
    return false
  }
}

/** The pids in the cgroup now (its `cgroup.procs`), or [] once it is removed. */
export function cgroupProcs(path: string): number[] {
  let text: string
  try {
    text = readFileSync(join(path, 'cgroup.procs'), 'latin1')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
  return text.split('\n').filter((l) => l !== '').map(Number)
}

/** Removes the cgroup if it is empty: true when it is gone (removed now, or before). */
export function removeCgroup(path: string): boolean {
  try {
    rmdirSync(path)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT'
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

/** How long killCgroupSync waits, at most, for the kernel to empty the cgroup before it removes it. */
const SYNC_REMOVE_MS = 100

/**
 * For an exit backstop (no event loop left): `cgroup.kill`, then a short bounded wait (1 ms
 * sleeps, not a spin) for `populated 0` and the removal. True when the kill was sent. A cgroup
 * that has not emptied in time stays, named for doctor to judge.
 */
export function killCgroupSync(path: string): boolean {
  if (!cgroupPopulated(path)) {
    removeCgroup(path)
    return false
  }
  try {
    writeFileSync(join(path, 'cgroup.kill'), '1')
  } catch {
    return false // removed meanwhile, or not ours any more
  }
  const nap = new Int32Array(new SharedArrayBuffer(4))
  const deadline = performance.now() + SYNC_REMOVE_MS
  while (cgroupPopulated(path) && performance.now() < deadline) Atomics.wait(nap, 0, 0, 1)
  if (!cgroupPopulated(path)) removeCgroup(path)
  return true
}
