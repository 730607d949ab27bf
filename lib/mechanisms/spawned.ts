/**
 * What spawn() applied to each child it started (spawnedInfo), and the trust in its process group:
 * when a listing of the group may be believed and signalled, and when the group is gone for good.
 * spawn.ts registers each child here (register), Supervisor.adopt() a child it did not start
 * (trackChild); the stops list members through spawnedGroupMembers.
 */
import type { ChildProcess } from 'node:child_process'
import { nativeBinding } from '../ground/native'
import { type GroupListing, groupListingSoon } from './group'
import { type ProcessHandle, openProcess } from './handle'
import type { SpawnedInfo } from './spawn'

const spawned = new WeakMap<ChildProcess, SpawnedInfo>()

/** What spawn() applied to `child`, or undefined for a child it did not start. */
export function spawnedInfo(child: ChildProcess): SpawnedInfo | undefined {
  return spawned.get(child)
}

// ---- Group trust ----
// A process group id is safe to list and signal only while the group is provably the child's.
// spawn() returns only once the child leads its group (exec-report.ts), so from then on:
// - while the child (its leader) is unreaped, its pid holds the id: listings are trusted, and
//   every member they find is pinned (a pidfd) as a witness;
// - the first scan of the process table taken after the leader is reaped is trusted too, and pins
//   witnesses: a stranger would need a whole pid wrap-around between the reap and that scan, which
//   runs in the same loop turn (the 'exit' hook in register() asks for it). Which scan that is
//   depends on when the scan was taken, not on who asked: a stop's listing that shares that scan is
//   trusted as well (before, a stop that asked first was judged without witnesses, because the
//   'exit' hook that pins them had not run yet, and the group was declared gone with its members
//   still running);
// - after that, a listing is trusted only if a witness is still alive and still in the group after
//   the scan: the group then never emptied, so its id was never free for reuse.
// Without a live witness the group is declared gone for good: we may leave a straggler behind, but
// we never signal a stranger.
const witnesses = new WeakMap<SpawnedInfo, Map<number, ProcessHandle>>()
// Why a group could not be proven either way (EMFILE while listing it or pinning its witnesses):
// then it is neither trusted nor declared gone, and every listing fails with that error, so a stop
// reports itself uncertain instead of "empty".
const unknown = new WeakMap<SpawnedInfo, Error>()
// The number of the first scan taken after the leader was reaped (-1: the exit backstop's table;
// FAILED_SCAN: that scan failed, so no listing is trusted without a witness).
const reapScan = new WeakMap<SpawnedInfo, number>()
const FAILED_SCAN = -2
const isGoneError = (err: unknown): boolean => (err as { code?: unknown })?.code === 'ESRCH'
// ESRCH's number, read at the first exit: node:os is not loaded with reapkit (about 0.1 ms).
let esrch: number | undefined
// eslint-disable-next-line @typescript-eslint/no-require-imports
const esrchNumber = (): number => (esrch ??= (require('node:os') as typeof import('node:os')).constants.errno.ESRCH)

function isReaped(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null
}

function witnessAlive(handle: ProcessHandle, pgid: number): boolean {
  try {
    handle.signal(0) // through the pidfd: fails once the process has exited
    const binding = nativeBinding()
    return binding !== null && binding.getpgid(handle.pid) === pgid
  } catch {
    return false
  }
}

/**
 * Pins members found by a trusted listing as witnesses of the group. Not the leader (`leader`, the
 * child): a witness speaks only after the reap, when the leader is gone (a stop of thousands of
 * children paid a descriptor, a /proc look and a close for each leader's witness).
 */
function pinWitnesses(info: SpawnedInfo, pgid: number, members: number[], leader: number): void {
  let pinned = witnesses.get(info)
  if (!pinned) witnesses.set(info, (pinned = new Map()))
  for (const pid of members) {
    if (pid === leader || pinned.has(pid)) continue
    try {
      // allowSelf: a member of the child's group is never this process (its group is another).
      const handle = openProcess(pid, { allowSelf: true })
      if (witnessAlive(handle, pgid)) pinned.set(pid, handle)
      else handle.close()
    } catch (err) {
      if (!isGoneError(err)) unknown.set(info, err as Error) // not pinned, not gone: a witness we lack
    }
  }
}

function declareGone(info: SpawnedInfo): void {
  info.groupGone = true
  unknown.delete(info)
  const pinned = witnesses.get(info)
  if (pinned === undefined) return // the usual case at the reap: no member was ever pinned
  for (const handle of pinned.values()) handle.close()
  witnesses.delete(info)
}

/**
 * The first look after the reap, step one: kill(-pgid, 0) fails with ESRCH only when no process (not
 * even a zombie) has the id, so the group is empty, and the id was the child's until the reap in this
 * loop turn (as for the first scan above). This one syscall replaces a scan of the whole process
 * table at most exits (~1.2 ms of CPU a spawn: bench/spawn-cost.mjs). A member, a zombie or EPERM
 * (another user's member) goes on to the scan, which pins witnesses.
 */
function groupEmptyAtReap(pgid: number): boolean {
  // The addon's probe returns the errno: the usual answer here is ESRCH, and process.kill's Error
  // for it (its stack captured) cost several times the syscall, at every child's exit.
  const probe = nativeBinding()?.groupProbe
  if (typeof probe === 'function') {
    try {
      return probe(pgid) === esrchNumber()
    } catch {
      return false // (EINVAL for pgid <= 1: never a spawned child's) not proven empty: the scan decides
    }
  }
  try {
    process.kill(-pgid, 0)
    return false
  } catch (err) {
    return isGoneError(err)
  }
}

/** Whether a listing just taken of `info`'s group can be trusted (see above); drops dead witnesses. */
function trustedNow(child: ChildProcess, info: SpawnedInfo, pgid: number, firstAfterReap: boolean): boolean {
  if (!isReaped(child) || firstAfterReap) return true
  const pinned = witnesses.get(info)
  let alive = false
  for (const [pid, handle] of pinned ?? []) {
    if (witnessAlive(handle, pgid)) alive = true
    else {
      handle.close()
      pinned!.delete(pid)
    }
  }
  return alive
}

/**
 * @internal Live members of a spawned (or adopted) child's group, listed only while the group is
 * provably the child's (see "Group trust"); [] once it is gone, and from then on without listing.
 */
export async function spawnedGroupMembers(child: ChildProcess): Promise<number[]> {
  const info = spawned.get(child)
  if (!info || info.pgid === null || info.groupGone) return []
  const pgid = info.pgid
  let listing: GroupListing
  try {
    listing = await groupListingSoon(pgid)
  } catch (err) {
    // The first look after the reap is the one that pins witnesses: without it, trust is unknown,
    // and a later scan is no first look (it may come any time later).
    if (isReaped(child) && !reapScan.has(info)) {
      unknown.set(info, err as Error)
      reapScan.set(info, FAILED_SCAN)
    }
    throw err
  }
  if (info.groupGone) return []
  // Looked at in the callback that took the scan: the child's state is the one the scan saw.
  const reaped = isReaped(child)
  if (reaped && !reapScan.has(info)) reapScan.set(info, listing.scan)
  const members = listing.members
  if (members.length === 0 && reaped) {
    declareGone(info)
    return []
  }
  if (!trustedNow(child, info, pgid, reaped && reapScan.get(info) === listing.scan)) {
    const err = unknown.get(info)
    if (err) throw err // no witness, for want of descriptors: unknown, not gone
    declareGone(info)
    return []
  }
  pinWitnesses(info, pgid, members, child.pid!)
  return members
}

/**
 * @internal The same rule, synchronously, against one listing of the process table (`table`, as
 * the exit backstop takes it once for every child). A table taken after the reap, before any scan
 * was (the 'exit' hook's is still pending in this loop turn), is that first scan after the reap.
 */
export function spawnedGroupMembersSync(child: ChildProcess, table: Map<number, number[]>): number[] {
  const info = spawned.get(child)
  if (!info || info.pgid === null || info.groupGone) return []
  const members = table.get(info.pgid) ?? []
  const first = isReaped(child) && !reapScan.has(info) && !unknown.has(info)
  if (first) reapScan.set(info, -1)
  if (!trustedNow(child, info, info.pgid, first)) {
    if (!unknown.has(info)) declareGone(info) // unknown: not signalled, but not declared gone either
    return []
  }
  return members // not pinned: the backstop signals them at once (each pinned and checked there)
}

/**
 * @internal Gives a child that spawn() did not start the same tracking (pinned handle, group trust),
 * for Supervisor.adopt(). Call it before libuv can reap the child.
 */
export function trackChild(child: ChildProcess): SpawnedInfo | undefined {
  const existing = spawned.get(child)
  if (existing || child.pid === undefined || isReaped(child)) return existing
  let handle: ProcessHandle | null = null
  let pgid: number | null = null
  try {
    handle = openProcess(child.pid)
  } catch (err) {
    if (isGoneError(err)) return undefined
    // Out of descriptors, say: unpinned, but still our unreaped child, whose group is still its own.
  }
  try {
    const binding = nativeBinding()
    if (binding && binding.getpgid(child.pid) === child.pid) pgid = child.pid // needs no descriptor
  } catch (err) {
    if (isGoneError(err)) {
      handle?.close()
      return undefined
    }
  }
  return register(child, { pgid, parentDeathSignal: null, startup: 'none' }, handle)
}

/** `applied` becomes the child's info (every caller passes a fresh object): completed in place, not copied. */
export function register(child: ChildProcess, applied: Omit<SpawnedInfo, 'handle' | 'groupGone'>, handle: ProcessHandle | null): SpawnedInfo {
  const info = applied as SpawnedInfo
  info.handle = handle
  info.groupGone = false
  spawned.set(child, info)
  if (child.pid !== undefined) {
    child.once('exit', () => {
      handle?.close()
      if (info.pgid === null || info.groupGone) return
      // Look once, right after libuv reaped it: the group provably empty, or pin what is left.
      if (groupEmptyAtReap(info.pgid)) declareGone(info)
      else spawnedGroupMembers(child).catch(() => {}) // a failure is kept as "unknown" (above)
    })
  }
  return info
}
