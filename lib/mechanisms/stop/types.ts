/** The public types of killProcessGracefully (re-exported by ../kill.ts). */
import type { Logger } from '../../ground/logger'
import type { ProcessHandle } from '../handle'
import type { SignalLike } from '../../ground/validate'
import type { ContainerResult } from '../container/child'
import type { CgroupOutcome } from './cgroup-unit'
import type { StopReach } from './reach'

export interface KillOptions {
  /** The first signal, sent to the whole group. Default 'SIGTERM'. */
  signal?: SignalLike
  /** How long to wait after `signal` before sending `killSignal`. Default 9000 (REAPKIT_KILL_GRACE_MS). */
  graceMs?: number
  /** The signal for whatever remains after the grace. Default 'SIGKILL'. */
  killSignal?: SignalLike
  /** Signal the whole process group. Default: true when the target leads its own group. */
  group?: boolean
  /**
   * After `killSignal`, how long to wait for the group to be gone before reporting survivors.
   * Default 5000. A container client's container stops under the same bounds: every engine call
   * ends within `graceMs` + `confirmMs`.
   */
  confirmMs?: number
  /** Cancels the grace wait: escalates to `killSignal` at once. */
  abortSignal?: AbortSignal
  /** Permit signalling this process's own group. Default false. */
  allowSelf?: boolean
  /**
   * One structured event per step: signal.sent, then group.gone or kill.survivors (both with
   * `uncertain`; group.gone at warn when the stop was uncertain). Default: silent.
   */
  logger?: Logger
}

export interface SignalSent {
  signal: NodeJS.Signals
  /** Milliseconds since the call started. */
  atMs: number
  /**
   * How many processes it was sent to. The kill phase's SIGKILL for a child of reapkit's spawn()
   * goes to its group by the group's id while the child is unreaped (the id is provably its own),
   * reaching members forked since the last look too: `processes` then counts the pinned members it
   * reached, and `group` stays unset (it marks the uncertain case below).
   */
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
  /**
   * Linux: sent to the members of the child's own cgroup (spawn({ cgroup: true })), escapees of
   * its group included: SIGTERM to each through its pin, SIGKILL as one `cgroup.kill`. `processes`
   * counts the members it reached that no other signal of this stop had reached already.
   */
  cgroup?: boolean
}

/** The stop's own part of a KillResult: the target's process group (or job). */
export interface KillGroupResult {
  pid: number
  /** The group that was signalled, or null when only the process itself was. */
  pgid: number | null
  signalsSent: SignalSent[]
  /**
   * True when the grace ended (or the abort signal cut it short) with members still alive, so the
   * kill phase began. The kill signal then went to whoever was still alive: `signalsSent` lists it,
   * unless they had all exited in the meantime (with `graceMs: 0` or an abort before the stop,
   * members the first signal ends may be gone before the kill phase looks).
   */
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
   * listed or pinned may remain. Also when a group reapkit's spawn did not start lost its leader
   * while members ran: it can no longer be listed, so what they fork is not found
   * (ERR_REAPKIT_GROUP_UNPROVEN). `error` says why.
   */
  uncertain: boolean
  /** The first error that made the result uncertain (a system error with a `code`), or null. */
  error: Error | null
  durationMs: number
  /**
   * What the stop could see of what the target started, so that `survivors: []` is never read as
   * more than it is: 'cgroup' (the child's own cgroup, spawn({ cgroup: true }): escapees of its
   * group included), 'group' (its process group: a descendant that left it by setsid or a double
   * fork is neither signalled nor counted in `survivors`), 'process' (the target alone), 'job'
   * (Windows: the Job object reapkit's spawn() ran it in).
   */
  reach: StopReach
  /**
   * Linux: what the stop did with the child's own cgroup, when spawn({ cgroup: true }) contained it:
   * how many members it had (escapees of the group included), whether `cgroup.kill` was needed,
   * whether the kernel said it was empty, and whether it was removed. Absent otherwise.
   */
  cgroup?: CgroupOutcome
}

/**
 * What a stop reports (killProcessGracefully, Supervisor.terminate): the group's stop, and for a
 * container client that spawn() started, its container's (`containers`, `containerSurvivors`: a
 * container not confirmed gone is a survivor, and an engine that did not answer makes it `uncertain`).
 */
export type KillResult = KillGroupResult & ContainerResult

/** What the stop needs of a pinned process: a ProcessHandle, or our own unreaped child when none could be opened. */
export type Pinned = Pick<ProcessHandle, 'pid' | 'closed' | 'exited' | 'signal' | 'ref' | 'unref' | 'close'>
