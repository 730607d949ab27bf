/**
 * closeClient(child): the bounded two-phase close of a stdio server.
 *
 * 1. Graceful: run the caller's `close()` (an MCP client's, say), then end the child's stdin (after
 *    the close(), whatever it did: an SDK Client over the child's pipes never ends them), bounded
 *    by `closeTimeoutMs` (default 2000), then wait for the exit within that same bound. A close()
 *    still pending 500 ms (at most half the bound) before that deadline is not waited for: stdin
 *    ends then, so the server still has that time to leave on it.
 * 2. Forced: killProcessGracefully on the child's process group (SIGTERM, `graceMs`, SIGKILL). Also
 *    when the child did exit in phase 1 but left members of its group behind (a server started
 *    through `sh -c` or npx whose wrapper exited first), or anything in its own cgroup (spawn's
 *    `cgroup: true`: a setsid helper, a double-forked daemon).
 * 3. A container client's container (spawn() recorded it) is stopped through its engine with phase
 *    2 (killProcessGracefully does it), or on its own when the client left in phase 1: a client that
 *    exits does not mean its container did.
 *
 * It never waits on pipes: waiting for 'close' would also wait for any grandchild that holds the
 * child's stdout open, possibly forever. At the end it destroys this process's ends of the child's
 * stdio, so nothing the child left behind can keep this process from exiting.
 */
import type { ChildProcess } from 'node:child_process'
import { KILL_CONFIRM_MS_DEFAULT, closeTimeoutMs as envCloseTimeoutMs, killGraceMs } from '../ground/config'
import { type ContainerResult, stopContainersOf, withContainers } from '../mechanisms/container/child'
import { reachOf } from '../mechanisms/stop/reach'
import type { ContainerOutcome } from '../mechanisms/container/stop'
import { typeError } from '../ground/errors'
import { isChildProcess } from '../mechanisms/exit'
import type { KillResult, SignalSent } from '../mechanisms/kill'
import { stopTarget } from '../mechanisms/stop/kill'
import { readKillOptions } from '../mechanisms/stop/options'
import { type Deadlines, ownTimers } from '../mechanisms/stop/deadlines'
import { type Logger, logEvent } from '../ground/logger'
import { spawnedGroupMembers, spawnedInfo } from '../mechanisms/spawned'
import { cgroupPopulated } from '../mechanisms/cgroup/make'
import { type SignalLike, signalNumber, validateMs, validateOptions, validatePid } from '../ground/validate'
import { childExit } from '../ground/wait'

export interface CloseClientOptions {
  /** The graceful close to try first (e.g. `() => client.close()`). Default: end the child's stdin. */
  close?: () => unknown
  /** Bound of phase 1: close, then exit. Default 2000 (REAPKIT_CLOSE_TIMEOUT_MS). */
  closeTimeoutMs?: number
  /** Phase 2's SIGTERM -> SIGKILL grace. Default 9000 (REAPKIT_KILL_GRACE_MS). */
  graceMs?: number
  /** Phase 2's first signal. Default 'SIGTERM'. */
  signal?: SignalLike
  /** Phase 2's last signal. Default 'SIGKILL'. */
  killSignal?: SignalLike
  /** One structured event per step. Default: silent. */
  logger?: Logger
}

/**
 * The close's report. For a container client spawn() started, `containers` and `containerSurvivors`
 * say what became of its container (see KillResult); a client that left in phase 1 while its
 * container still ran makes the close 'forced' (the container was stopped through the engine).
 */
export interface CloseReport extends ContainerResult {
  pid: number
  pgid: number | null
  /** 'graceful': it left on its own in phase 1; 'forced': phase 2 was needed; 'already-exited'. */
  phase: 'graceful' | 'forced' | 'already-exited'
  /** The caller's close() (or stdin end) completed within the bound. */
  closeCompleted: boolean
  /** The close() error, if it threw or rejected. */
  closeError: unknown
  code: number | null
  signal: NodeJS.Signals | null
  signalsSent: SignalSent[]
  escalated: boolean
  survivors: number[]
  /**
   * True when the stop could not see everything (e.g. EMFILE): the child itself was still
   * signalled, but other members of its group may remain (see KillResult.uncertain).
   */
  uncertain: boolean
  /** The error that made the stop uncertain (a system error with a `code`), or null. */
  error: Error | null
  /** Phase 1's duration, and the whole call's, in ms. */
  gracefulMs: number
  durationMs: number
  /** What the close and its stop could see of what the child started: see KillResult.reach. */
  reach: KillResult['reach']
  /** Linux: the child's own cgroup's part in phase 2 (spawn({ cgroup: true })): see KillResult.cgroup. */
  cgroup?: KillResult['cgroup']
}

const now = (): number => performance.now()

/** Phase 1's time kept for the server to leave on stdin end when the caller's close() has not settled. */
const STDIN_RESERVE_MS = 500

/** How long the child's stdio may take to reach EOF after its group is gone, before it is destroyed. */
const STDIO_DRAIN_MS = 100

/** Ends the child's stdin (EOF for the server), unless it is gone or ended; never throws. */
function endStdin(child: ChildProcess): void {
  const stdin = child.stdin
  if (!stdin || stdin.destroyed || stdin.writableEnded) return
  stdin.on('error', () => {}) // a child already gone (EPIPE on what a close() left to flush)
  try {
    stdin.end()
  } catch {
    // already gone
  }
}

/** Destroys this process's ends of the child's stdio pipes (never waits for them to drain). */
function releaseStdio(child: ChildProcess): void {
  for (const stream of child.stdio) {
    if (stream && typeof (stream as { destroy?: unknown }).destroy === 'function') (stream as { destroy(): void }).destroy()
  }
}

/** The bounded two-phase close; resolves to a report, never rejects for the child's behaviour. */
export function closeClient(child: ChildProcess, options: CloseClientOptions = {}): Promise<CloseReport> {
  return closeClientWith(child, options, ownTimers)
}

/**
 * @internal closeClient, its bounded waits (phase 1, its stop's grace and confirm, the stdio's last
 * moment) kept by `deadlines`: shutdownAll's closes share one timer (deadlines.ts).
 */
export async function closeClientWith(child: ChildProcess, options: CloseClientOptions, deadlines: Deadlines): Promise<CloseReport> {
  options = validateOptions(options)
  if (!isChildProcess(child)) throw typeError('ERR_INVALID_ARG_TYPE', 'The "child" argument must be a ChildProcess')
  if (child.pid === undefined) throw typeError('ERR_INVALID_ARG_VALUE', 'The child process was never spawned (it has no pid)')
  if (options.close !== undefined && typeof options.close !== 'function') {
    throw typeError('ERR_INVALID_ARG_TYPE', 'The "close" option must be a function')
  }
  const closeMs = validateMs(options.closeTimeoutMs, 'closeTimeoutMs') ?? envCloseTimeoutMs()
  const graceMs = validateMs(options.graceMs, 'graceMs')
  // Phase 2's signals too, up front: a bad one found after phase 1 would leave the child running.
  if (options.signal != null) signalNumber(options.signal, { allowZero: false }) // null: the default, as below
  if (options.killSignal != null) signalNumber(options.killSignal, { allowZero: false })
  validatePid(child.pid, 'child.pid')
  const { logger } = options
  const pid = child.pid
  const pgid = spawnedInfo(child)?.pgid ?? null
  const started = now()
  const exited = childExit(child)
  // Members still in the child's group (never listed again once it was seen empty: see spawn.ts).
  // And anything in its own cgroup (spawn({ cgroup: true })): what left the group is still there.
  const cgroup = spawnedInfo(child)?.cgroup
  const groupLeft = async (): Promise<boolean> => {
    if (cgroup !== undefined && cgroupPopulated(cgroup)) return true
    try {
      return (await spawnedGroupMembers(child)).length > 0
    } catch {
      return true // cannot list: let phase 2 stop what it can pin and report it uncertain
    }
  }

  let phase: CloseReport['phase'] = 'graceful'
  let closeCompleted = false
  let closeError: unknown = null
  let kill: KillResult | null = null
  let containers: ContainerOutcome[] = []
  let gracefulMs = 0
  let killStartedAt = started
  try {
    if (child.exitCode !== null || child.signalCode !== null) {
      phase = 'already-exited'
    } else {
      // Phase 1: the graceful close, then the exit, both within closeTimeoutMs.
      const deadline = started + closeMs
      logEvent(logger, 'info', 'close.attempt', { pid, pgid, closeTimeoutMs: closeMs, via: options.close ? 'close(), then stdin end' : 'stdin end' })
      let settled = false
      const attempt = (async () => {
        try {
          if (options.close) await options.close()
        } catch (err) {
          closeError = err
        }
        settled = true
      })()
      // Then stdin end, after the caller's close() too: an SDK Client's close() over the child's
      // pipes (StdioServerTransport(child.stdout, child.stdin)) lets go of the streams but never
      // ends them, and a server leaves on stdin end; without it, the documented pattern
      // `closeClient(child, { close: () => client.close() })` always ended 'forced'. A close()
      // that never settles must not take the server's whole time to leave: stdin ends at the
      // latest STDIN_RESERVE_MS (at most half the bound) before the deadline.
      await deadlines.settlesBy(attempt, deadline - Math.min(STDIN_RESERVE_MS, closeMs / 2))
      endStdin(child)
      const gone = await deadlines.settlesBy(exited.promise, deadline)
      closeCompleted = settled
      if (gone) logEvent(logger, 'info', 'close.graceful', { pid, pgid, elapsedMs: now() - started })
      else {
        phase = 'forced'
        logEvent(logger, 'warn', 'close.timeout', { pid, pgid, elapsedMs: now() - started })
      }
    }
    gracefulMs = now() - started
    // Phase 2: the group kill, also for members that outlived a leader that left in phase 1.
    if (phase === 'forced' || (await groupLeft())) {
      if (phase !== 'forced' && phase !== 'already-exited') phase = 'forced'
      killStartedAt = now()
      const stop = readKillOptions({
        ...(graceMs !== undefined ? { graceMs } : {}),
        ...(options.signal !== undefined ? { signal: options.signal } : {}),
        ...(options.killSignal !== undefined ? { killSignal: options.killSignal } : {}),
        ...(logger ? { logger } : {}),
      })
      kill = await stopTarget(child, { ...stop, deadlines })
    } else {
      containers = await stopContainersOf(child, { graceMs: graceMs ?? killGraceMs(), confirmMs: KILL_CONFIRM_MS_DEFAULT, logger })
      if (containers.some((c) => c.stopped) && phase === 'graceful') phase = 'forced'
    }
  } finally {
    exited.dispose()
    // Once the group is gone its pipes reach EOF at once: let what it wrote last (a server's final
    // report line on stderr) be read, for a short bounded moment, before this end is destroyed.
    // A grandchild that escaped the group and still holds a pipe costs at most that moment.
    if (child.stdio.some((s) => s && !(s as { destroyed?: boolean }).destroyed)) {
      let listener!: () => void
      await deadlines.settlesBy(new Promise<void>((res) => child.once('close', (listener = res))), now() + STDIO_DRAIN_MS)
      child.off('close', listener)
    }
    releaseStdio(child)
  }
  const status = child.exitCode !== null || child.signalCode !== null ? { code: child.exitCode, signal: child.signalCode } : null
  return withContainers({
    pid,
    pgid,
    phase,
    closeCompleted,
    closeError,
    code: status?.code ?? kill?.code ?? null,
    signal: status?.signal ?? kill?.signal ?? null,
    // One time origin, this call's start: phase 2's signals are timed from its own start.
    signalsSent: (kill?.signalsSent ?? []).map((s) => ({ ...s, atMs: s.atMs + (killStartedAt - started) })),
    escalated: kill?.escalated ?? false,
    survivors: kill?.survivors ?? [],
    uncertain: kill?.uncertain ?? false,
    error: kill?.error ?? null,
    gracefulMs,
    durationMs: now() - started,
    reach: kill?.reach ?? reachOf(child, pgid),
    ...(kill?.cgroup ? { cgroup: kill.cgroup } : {}),
  }, kill?.containers ?? containers)
}
