/**
 * killProcessGracefully on Windows. There are no process groups and no signals: every signal name
 * libuv knows (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGKILL) ends a process at once with
 * TerminateProcess, and no handler runs. What Windows has instead is the Job object:
 *
 * - a child that reapkit's spawn() started runs under reapkit-job.exe in a kill-on-close job
 *   (spawn-win32.ts). The first step asks that launcher to end its job (its stop event): it calls
 *   TerminateJobObject and exits only once the job lists no process, so its exit, seen here by a
 *   wait on its handle, means the whole tree is gone. If the launcher cannot be asked (it has not
 *   created its event yet), it is terminated instead: its job's last handle closes and the kernel
 *   ends every member;
 * - anything else (a pid, a handle, a child of Node's own spawn) is one process: TerminateProcess
 *   through the pinned handle. What it started is not reached (Windows keeps no tree to walk
 *   exactly); start it with reapkit's spawn to have its tree in a job.
 *
 * A graceful stop on Windows is the stdin end of closeClient's first phase: the job step here is
 * already final. After the grace, the kill step terminates the target itself (the launcher, whose
 * job the kernel then ends), and the call waits up to `confirmMs` for its exit.
 */
import type { ChildProcess } from 'node:child_process'
import { logEvent, type Logger } from '../ground/logger'
import { binding } from '../ground/native'
import { signalName } from '../ground/validate'
import { childExit, settlesWithin, settlesWithinUnlessAborted } from '../ground/wait'
import type { KillGroupResult, Pinned, SignalSent } from './kill'

export interface WindowsStop {
  pid: number
  child: ChildProcess | null
  /** The pinned target, or null when it is known to be gone. */
  leader: Pinned | null
  /** Whether the pin was opened for this call (and is closed at its end). */
  ownLeader: boolean
  /** The child runs under reapkit-job.exe (spawn-win32.ts). */
  job: boolean
  first: number
  last: number
  graceMs: number
  confirmMs: number
  abort: AbortSignal | undefined
  logger: Logger | undefined
  started: number
}

const now = (): number => performance.now()

export async function stopOnWindows(s: WindowsStop): Promise<KillGroupResult> {
  const { pid, child, leader } = s
  const signalsSent: SignalSent[] = []
  let uncertain = false
  let error: Error | null = null
  // The target's exit: libuv's for our child (its status with it), else the wait on the pin.
  const exit = child ? childExit(child) : null
  const exited: Promise<unknown> = exit ? exit.promise : leader ? leader.exited : Promise.resolve()
  const record = (sig: number, job: boolean): void => {
    const sent: SignalSent = { signal: signalName(sig)!, atMs: now() - s.started, processes: 1, ...(job ? { job: true } : {}) }
    signalsSent.push(sent)
    logEvent(s.logger, 'info', 'signal.sent', { pid, ...sent })
  }
  /** TerminateProcess through the pin; false when the process had already gone. */
  const terminate = (sig: number): boolean => {
    try {
      leader!.signal(sig)
      return true
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'ESRCH') {
        uncertain = true
        error ??= err as Error
      }
      return false
    }
  }

  let escalated = false
  let survivors: number[] = []
  try {
    if (leader && !leader.closed) {
      let asked = false
      if (s.job && binding?.jobStop) {
        try {
          asked = binding.jobStop(pid)
        } catch (err) {
          uncertain = true
          error ??= err as Error
        }
        if (asked) record(s.first, true)
      }
      // Not asked (no launcher event yet): TerminateProcess of the launcher; the kernel ends its job.
      if (!asked && terminate(s.first)) record(s.first, false)
      if (!(await settlesWithinUnlessAborted(exited, s.graceMs, s.abort))) {
        escalated = true
        if (terminate(s.last)) record(s.last, false)
        if (!(await settlesWithin(exited, s.confirmMs))) survivors = [pid]
      }
    }
    if (survivors.length > 0) logEvent(s.logger, 'error', 'kill.survivors', { pid, survivors })
    else logEvent(s.logger, 'info', 'group.gone', { pid, escalated, elapsedMs: now() - s.started })
  } finally {
    exit?.dispose()
    if (s.ownLeader) leader?.close()
  }
  const status = child && (child.exitCode !== null || child.signalCode !== null) ? { code: child.exitCode, signal: child.signalCode } : null
  return {
    pid,
    pgid: null,
    signalsSent,
    escalated,
    code: status?.code ?? null,
    signal: status?.signal ?? null,
    survivors,
    uncertain,
    error,
    durationMs: now() - s.started,
  }
}
