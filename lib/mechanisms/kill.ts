/**
 * killProcessGracefully(target): signal (SIGTERM) the whole process group, wait by kernel event,
 * and after a bounded grace send the kill signal (SIGKILL) to whatever remains.
 *
 * "Done" means no live process remains in the group (zombies do not count; members still running
 * after the leader exited are waited for too), not merely that the leader exited. A well-behaved
 * group is not delayed: the call returns as soon as it is gone.
 *
 * Every member is pinned (a pidfd on Linux) before it is signalled, and signalled through that
 * handle: a member that exits and whose pid is reused is never hit. The group is listed again each
 * time the known members are all gone, so children forked meanwhile are found too.
 */
import type { ChildProcess } from 'node:child_process'
import { KILL_CONFIRM_MS_DEFAULT, killGraceMs } from '../ground/config'
import { rangeError, systemError, typeError } from '../ground/errors'
import { isChildProcess, type ProcessTarget } from './exit'
import { groupMembersSoon } from './group'
import { type Logger, logEvent } from '../ground/logger'
import { type ProcessHandle, ProcessHandle as Handle, openProcess } from './handle'
import { binding } from '../ground/native'
import { stopOnWindows } from './kill-win32'
import { containerStopsOf, type ContainerResult, withContainers } from './container/child'
import { spawnedGroupMembers, spawnedInfo } from './spawn'
import { childExit, settlesWithin, settlesWithinUnlessAborted } from '../ground/wait'
import { isSelf, type SignalLike, signalName, signalNumber, validateAbortSignal, validateMs, validatePid, validateOptions } from '../ground/validate'

export interface KillOptions {
  /** The first signal, sent to the whole group. Default 'SIGTERM'. */
  signal?: SignalLike
  /** How long to wait after `signal` before sending `killSignal`. Default 9000 (REAPKIT_KILL_GRACE_MS). */
  graceMs?: number
  /** The signal for whatever remains after the grace. Default 'SIGKILL'. */
  killSignal?: SignalLike
  /** Signal the whole process group. Default: true when the target leads its own group. */
  group?: boolean
  /** After `killSignal`, how long to wait for the group to be gone before reporting survivors. Default 5000. */
  confirmMs?: number
  /** Cancels the grace wait: escalates to `killSignal` at once. */
  abortSignal?: AbortSignal
  /** Permit signalling this process's own group. Default false. */
  allowSelf?: boolean
  /** One structured event per step: signal.sent, group.gone, kill.survivors. Default: silent. */
  logger?: Logger
}

export interface SignalSent {
  signal: NodeJS.Signals
  /** Milliseconds since the call started. */
  atMs: number
  /** How many processes it was sent to. */
  processes: number
  /**
   * True for one signal to the whole process group by its id, sent when the members could not all
   * be listed or pinned (see `uncertain`); `processes` then counts the pinned members it reached
   * (at least the leader): others it may have reached could not be listed.
   */
  group?: boolean
  /**
   * Windows: the whole Job object that reapkit's spawn() runs the child in was ended by its
   * launcher, which exits once the job is empty. Absent when the launcher was terminated instead
   * (the kernel then ends its job as its last handle closes).
   */
  job?: boolean
}

/** The group's part of a KillResult. */
export interface KillGroupResult {
  pid: number
  /** The group that was signalled, or null when only the process itself was. */
  pgid: number | null
  signalsSent: SignalSent[]
  /** True when the kill signal had to be sent. */
  escalated: boolean
  /** The target's exit code, where known (our own child). */
  code: number | null
  /** The signal that ended the target, where known (our own child). */
  signal: NodeJS.Signals | null
  /** Processes still alive when the call gave up (empty unless they resisted even SIGKILL). */
  survivors: number[]
  /**
   * True when the stop could not see everything (e.g. EMFILE: the group could not be listed, a
   * member could not be pinned, or an exit could not be watched). The target itself was still
   * signalled, and only a process seen to exit counts as gone; but members that could not be
   * listed or pinned may remain. `error` says why.
   */
  uncertain: boolean
  /** The first error that made the result uncertain (a system error with a `code`), or null. */
  error: Error | null
  durationMs: number
}

/**
 * What a stop reports (killProcessGracefully, Supervisor.terminate): the group's stop, and for a
 * container client that spawn() started, its container's (`containers`, `containerSurvivors`: a
 * container not confirmed gone is a survivor, and an engine that did not answer makes it `uncertain`).
 */
export type KillResult = KillGroupResult & ContainerResult

/** What the stop needs of a pinned process: a ProcessHandle, or our own unreaped child when none could be opened. */
export type Pinned = Pick<ProcessHandle, 'pid' | 'closed' | 'exited' | 'signal' | 'ref' | 'unref' | 'close'>

interface Tracked {
  handle: Pinned
  exited: Promise<unknown>
  gone: boolean
}

/** How often an exit is polled for when it cannot be watched by event (out of descriptors, say). */
const DEGRADED_POLL_MS = 25

const now = (): number => performance.now()

/** Sends signal -> waits by event -> escalates after a bounded grace; resolves to a KillResult. */
export async function killProcessGracefully(target: ProcessTarget, options: KillOptions = {}): Promise<KillResult> {
  options = validateOptions(options)
  const started = now()
  // Signal 0 sends nothing: as a stop signal it would report a stop that never happened.
  const first = signalNumber(options.signal ?? 'SIGTERM', { allowZero: false })
  const last = signalNumber(options.killSignal ?? 'SIGKILL', { allowZero: false })
  const graceMs = validateMs(options.graceMs, 'graceMs') ?? killGraceMs()
  const confirmMs = validateMs(options.confirmMs, 'confirmMs') ?? KILL_CONFIRM_MS_DEFAULT
  const abort = validateAbortSignal(options.abortSignal, 'abortSignal')
  if (options.group !== undefined && typeof options.group !== 'boolean') {
    throw typeError('ERR_INVALID_ARG_TYPE', 'The "group" option must be a boolean')
  }

  // Who: the pid, a pinned leader handle (if it still runs), the child, the group.
  let child: ChildProcess | null = null
  let pid: number
  let leader: Pinned | null = null
  let ownLeader = false
  let uncertain = false
  let resourceError: Error | null = null
  // A resource error (EMFILE...) is never read as "gone": the stop goes on with what it can reach,
  // and the result says it could not see everything.
  const degraded = (err: unknown): void => {
    uncertain = true
    resourceError ??= err instanceof Error ? err : new Error(String(err))
  }
  let knownPgid: number | null = null
  if (isChildProcess(target)) {
    child = target
    if (child.pid === undefined) throw typeError('ERR_INVALID_ARG_VALUE', 'The child process was never spawned (it has no pid)')
    pid = validatePid(child.pid, 'child.pid')
    const info = spawnedInfo(child)
    knownPgid = info?.pgid ?? null
    if (info?.handle && !info.handle.closed) leader = info.handle
  } else if (target instanceof Handle) {
    pid = target.pid
    leader = target.closed ? null : target
  } else {
    pid = validatePid(target)
  }
  if (isSelf(pid) && options.allowSelf !== true) {
    throw rangeError('ERR_REAPKIT_SELF', `Refusing to signal this process itself (pid ${pid}); pass { allowSelf: true }`)
  }
  // Pin the leader unless it is known to be gone (a ChildProcess that libuv has reaped).
  // A child not pinned at spawn is pinned by pid, and that is exact only while libuv has not reaped
  // it. libuv reaps a batch of children before it reports their exits one by one, so inside one
  // child's 'exit' another may be reaped already with its exitCode still null: look from the check
  // phase, when every exit reaped in this turn has been reported.
  if (child && !leader) await checkPhase()
  const reaped = child !== null && (child.exitCode !== null || child.signalCode !== null)
  if (!leader && !reaped) {
    try {
      leader = openProcess(pid)
      ownLeader = true
    } catch (err) {
      if (!isGoneError(err)) {
        // Not pinned, but not gone either. Our own unreaped child is still safe to signal by pid
        // (libuv has not reaped it, so its pid cannot have been reused); anything else we cannot
        // prove is the process meant, so the call fails with the error rather than report a stop.
        if (!child) throw err
        degraded(err)
        leader = childPin(child, pid)
        ownLeader = true
      }
    }
  }

  // A container client's container is stopped through its engine, alongside (container/child.ts).
  const containers = containerStopsOf(child, { graceMs, confirmMs, abortSignal: abort, logger: options.logger })

  // Windows: no groups, no signals; the Job object is the group (kill-win32.ts).
  if (process.platform === 'win32') {
    const result = await stopOnWindows({
      pid, child, leader, ownLeader, job: child !== null && spawnedInfo(child)?.job === true,
      first, last, graceMs, confirmMs, abort, logger: options.logger, started,
    })
    return withContainers(result, await containers)
  }

  // Alive, by its pidfd (signal 0 fails once it has exited): its pid, and a group id equal to it, are held.
  const leaderAlive = (): boolean => {
    if (!leader || leader.closed) return false
    try {
      leader.signal(0)
      return true
    } catch {
      return false
    }
  }
  let pgid: number | null = null
  if (options.group !== false) {
    if (knownPgid !== null) pgid = knownPgid
    else if (leader && binding) {
      try {
        // By number, then confirmed through the pidfd: the answer was about this very process.
        if (binding.getpgid(pid) === pid && leaderAlive()) pgid = pid
      } catch {
        // exited meanwhile
      }
    }
    if (options.group === true && pgid === null && leader) pgid = pid
  }
  if (pgid !== null && binding && options.allowSelf !== true && pgid === binding.getpgid(0)) {
    throw rangeError('ERR_REAPKIT_SELF', `Refusing to signal this process's own process group (pgid ${pgid}); pass { allowSelf: true }`)
  }

  const tracked = new Map<number, Tracked>()
  const signalsSent: SignalSent[] = []
  let sentTo = new Set<Pinned>() // who got the current phase's signal

  // A group id is listed only while it is provably the target's: for a child that spawn() started
  // or Supervisor adopted, by the group-trust rule of spawn.ts (witnesses); for anything else, while
  // its pinned leader is alive before and after the scan (its pid holds the id). Once that cannot
  // be proven, the group is never listed again: a straggler may be missed, a stranger never hit.
  let groupGone = false
  const info = child ? spawnedInfo(child) : undefined
  const listGroup = async (): Promise<number[]> => {
    if (pgid === null || groupGone) return []
    try {
      if (child && info && info.pgid === pgid) {
        const members = await spawnedGroupMembers(child)
        if (info.groupGone) groupGone = true
        return members
      }
      if (!leaderAlive()) {
        groupGone = true
        return []
      }
      const members = await groupMembersSoon(pgid)
      if (!leaderAlive()) {
        groupGone = true
        return []
      }
      return members
    } catch (err) {
      degraded(err) // not "empty": unknown. Keep to what is pinned.
      return []
    }
  }

  /** Pins and records the current live members; the pinned leader always, even before it joins its group. */
  const refresh = async (): Promise<void> => {
    const pids = await listGroup()
    if (leader && !leader.closed && !pids.includes(pid)) pids.push(pid)
    for (const p of pids) {
      if (tracked.has(p)) continue
      let handle: Pinned
      if (p === pid && leader) {
        handle = leader
      } else {
        try {
          handle = openProcess(p)
        } catch (err) {
          if (!isGoneError(err)) degraded(err) // a member we could not pin: it may remain
          continue // otherwise it exited between the listing and the pin
        }
        // Pinned now: if it is still in the group, the handle is that member.
        try {
          if (pgid !== null && binding && binding.getpgid(p) !== pgid) {
            handle.close()
            continue
          }
        } catch (err) {
          if (!isGoneError(err)) degraded(err)
          handle.close()
          continue
        }
      }
      const entry: Tracked = { handle, exited: Promise.resolve(), gone: false }
      entry.exited = handle.exited.then(
        () => (entry.gone = true),
        (err: unknown) => {
          if (handle.closed) return (entry.gone = true) // closed by us at the end: nobody waits any more
          // The exit could not be watched (EMFILE when the watch needs a descriptor): it is not an
          // exit. Poll the pinned handle instead, which needs no descriptor, until it says gone.
          degraded(err)
          return pollUntilGone(handle, () => finished).then(() => (entry.gone = true))
        },
      )
      handle.ref()
      tracked.set(p, entry)
    }
  }
  const live = (): Tracked[] => [...tracked.values()].filter((t) => !t.gone)
  const send = (sig: number, entries: Tracked[]): void => {
    let count = 0
    for (const t of entries) {
      try {
        t.handle.signal(sig)
        count++
      } catch {
        // ESRCH: it exited in the meantime; its exit event marks it gone
      }
    }
    if (count > 0) {
      const sent = { signal: signalName(sig)!, atMs: now() - started, processes: count }
      signalsSent.push(sent)
      logEvent(options.logger, 'info', 'signal.sent', { pid, pgid, ...sent })
    }
  }
  // When the group could not be listed or its members pinned, one killpg still reaches them all, but
  // only while our own child leads the group unreaped: its pid then holds the group id (spawn.ts).
  let groupSignalled = false
  let finished = false
  const byNumber = (): boolean => uncertain || (leader !== null && !(leader instanceof Handle))
  const groupByNumberDue = (): boolean =>
    !groupSignalled && uncertain && pgid !== null && pgid === pid && binding !== null &&
    child != null && child.exitCode === null && child.signalCode === null
  /** Whether `p` is in the group now (a member may move with setpgid). */
  const inGroup = (p: number): boolean => {
    try {
      return binding!.getpgid(p) === pgid
    } catch {
      return false
    }
  }
  /** One killpg; true when it was sent. */
  const signalGroupByNumber = (sig: number, pinnedMembers: number): boolean => {
    if (!groupByNumberDue()) return false
    groupSignalled = true
    try {
      binding!.killpg(pgid!, sig)
    } catch {
      return false // ESRCH: the group is gone
    }
    const sent = { signal: signalName(sig)!, atMs: now() - started, processes: Math.max(1, pinnedMembers), group: true }
    signalsSent.push(sent)
    logEvent(options.logger, 'warn', 'signal.sent', { pid, pgid, ...sent, reason: String(resourceError) })
    return true
  }
  /** Waits until every tracked member is gone and a fresh listing finds no one new, or `until`. */
  const settle = async (sig: number, until: number, stop?: AbortSignal): Promise<boolean> => {
    for (;;) {
      await refresh()
      // Signals by number (our unpinned child, the group by its id) go from the check phase only (see
      // above); nothing below awaits before they are sent.
      if (byNumber()) await checkPhase()
      const pending = live()
      let fresh = pending.filter((t) => !sentTo.has(t.handle))
      // The group's one killpg reaches every member still in the group: sending those the signal
      // through their pins as well would give it to them twice (and a second SIGINT means "force"
      // to many programs, the reapkit wrapper among them). So they get it from the killpg alone.
      const viaGroup = groupByNumberDue() ? fresh.filter((t) => inGroup(t.handle.pid)) : []
      if (viaGroup.length > 0) fresh = fresh.filter((t) => !viaGroup.includes(t))
      if (fresh.length > 0) {
        send(sig, fresh)
        for (const t of fresh) sentTo.add(t.handle)
      }
      // After the pinned ones, so they are counted as such.
      if (signalGroupByNumber(sig, viaGroup.length)) {
        // One that left the group before the killpg did not get it: through its pin, then.
        const missed = viaGroup.filter((t) => !inGroup(t.handle.pid))
        if (missed.length > 0) send(sig, missed)
      } else if (viaGroup.length > 0) {
        send(sig, viaGroup)
      }
      for (const t of viaGroup) sentTo.add(t.handle)
      if (pending.length === 0) return true
      const remaining = until - now()
      if (remaining <= 0 || stop?.aborted) return false
      await settlesWithinUnlessAborted(Promise.all(pending.map((t) => t.exited)), remaining, stop)
    }
  }

  let escalated = false
  let survivors: number[] = []
  try {
    const gone = await settle(first, started + graceMs, abort)
    if (!gone) {
      escalated = true
      sentTo = new Set() // everyone still alive gets the kill signal, once
      groupSignalled = false
      const dead = await settle(last, now() + confirmMs)
      if (!dead) survivors = live().map((t) => t.handle.pid)
    }
    if (survivors.length > 0) logEvent(options.logger, 'error', 'kill.survivors', { pid, pgid, survivors })
    else logEvent(options.logger, 'info', 'group.gone', { pid, pgid, escalated, elapsedMs: now() - started })
  } finally {
    finished = true // ends the polls of exits that could not be watched
    for (const t of tracked.values()) {
      t.handle.unref()
      if (t.handle !== leader || ownLeader) t.handle.close()
    }
  }

  // The target's own status: from the ChildProcess (exact), else what the kernel told the handle.
  let code: number | null = null
  let termSignal: NodeJS.Signals | null = null
  if (child && survivors.length === 0) {
    // libuv reports the exit once it has reaped the child, right after the group is gone; bounded
    // in case the child is not ours to reap. Neither the timer nor the listener outlives the wait.
    let info = statusOf(child)
    if (!info && tracked.get(pid)?.gone) {
      const exit = childExit(child)
      await settlesWithin(exit.promise, 1000)
      exit.dispose()
      info = statusOf(child)
    }
    if (info) ({ code, signal: termSignal } = info)
  }
  const result = { pid, pgid, signalsSent, escalated, code, signal: termSignal, survivors, uncertain, error: resourceError, durationMs: 0 }
  return { ...withContainers(result, await containers), durationMs: now() - started }
}

/** ESRCH (and the kernel's EINVAL race, mapped to ESRCH natively): the process is gone. Anything else is not. */
function isGoneError(err: unknown): boolean {
  return (err as { code?: unknown })?.code === 'ESRCH'
}

/** Resolves once the pinned process has exited (signal 0 through the pin fails with ESRCH), or the pin is closed. */
async function pollUntilGone(handle: Pinned, finished: () => boolean): Promise<void> {
  while (!handle.closed && !finished()) {
    try {
      handle.signal(0)
    } catch (err) {
      if (isGoneError(err) || handle.closed) return
    }
    // Unref'd: the stop's own bounded wait keeps the loop alive while it needs the answer.
    await new Promise((res) => setTimeout(res, DEGRADED_POLL_MS).unref())
  }
}

/** Resolves in the check phase of this loop turn (after the poll phase, where libuv reaps children). */
function checkPhase(): Promise<void> {
  return new Promise((res) => setImmediate(res))
}

/**
 * A pin for our own child when no handle could be opened (out of descriptors): signalled by pid,
 * which is exact while libuv has not reaped it. The caller signals only from the check phase
 * (checkPhase()), when every child libuv reaped has had its exit reported, and this re-checks the
 * status synchronously right before the syscall. Gone when libuv reports its exit.
 */
function childPin(child: ChildProcess, pid: number): Pinned {
  let closed = false
  const exit = childExit(child)
  const pin: Pinned = {
    pid,
    get closed() {
      return closed
    },
    exited: exit.promise.then(() => ({ pid, code: child.exitCode, signal: child.signalCode })),
    signal(sig = 'SIGTERM') {
      if (closed) throw systemError('EBADF', 'kill', 'the handle is closed')
      if (child.exitCode !== null || child.signalCode !== null) throw systemError('ESRCH', 'kill', 'the process has exited')
      process.kill(pid, signalNumber(sig))
    },
    ref: () => pin as ProcessHandle,
    unref: () => pin as ProcessHandle,
    close() {
      closed = true
      exit.dispose()
    },
  }
  return pin
}

/** Reads the child's status now if it has exited (no listener left behind when it has not). */
function statusOf(child: ChildProcess): { code: number | null; signal: NodeJS.Signals | null } | null {
  return child.exitCode !== null || child.signalCode !== null ? { code: child.exitCode, signal: child.signalCode } : null
}
