/**
 * The unit of a stop on Windows. There are no process groups and no signals: every signal name
 * libuv knows (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGKILL) ends a process at once with
 * TerminateProcess, and no handler runs. What Windows has instead is the Job object:
 *
 * - a child that reapkit's spawn() started runs under reapkit-job.exe in a kill-on-close job
 *   (spawn-win32.ts). The first phase asks that launcher to end its job (its stop event): it calls
 *   TerminateJobObject and exits only once the job lists no process, so its exit, seen here by a
 *   wait on its handle, means the whole tree is gone. If the launcher cannot be asked (it has not
 *   created its event yet), it is terminated instead: its job's last handle closes and the kernel
 *   ends every member;
 * - anything else (a pid, a handle, a child of Node's own spawn) is one process: TerminateProcess
 *   through the pinned handle. What it started is not reached (Windows keeps no tree to walk
 *   exactly); start it with reapkit's spawn to have its tree in a job.
 *
 * A graceful stop on Windows is the stdin end of closeClient's first phase: the job step here is
 * already final. After the grace, the kill phase terminates the target itself (the launcher, whose
 * job the kernel then ends), and the stop waits up to `confirmMs` for its exit.
 */
import { nativeBinding } from '../../ground/native'
import { signalName } from '../../ground/validate'
import { childExit } from '../../ground/wait'
import { spawnedInfo } from '../spawn'
import type { StopJournal } from './journal'
import type { PinnedTarget } from './pin'
import type { TargetUnit } from './unit'

export class JobUnit implements TargetUnit {
  readonly pgid = null
  readonly fields: Readonly<{ pid: number }>
  /** The child runs under reapkit-job.exe (spawn-win32.ts). */
  private readonly job: boolean
  /** False when the target was known gone (or its pin closed) as the stop began: nothing to do. */
  private readonly live: boolean
  private readonly exit: { promise: Promise<void>; dispose(): void } | null
  private readonly exited: Promise<unknown>
  private gone = false
  private sig = 0
  private force = false
  private signalled = false

  // The pin's own error (a child pinned by pid) is not reported on Windows: it never was.
  constructor(private readonly target: PinnedTarget, private readonly journal: StopJournal) {
    const { child, leader } = target
    this.fields = { pid: target.pid }
    this.job = child !== null && spawnedInfo(child)?.job === true
    this.live = leader !== null && !leader.closed
    // The target's exit: libuv's for our child (its status with it), else the wait on the pin. A wait
    // that fails ends the wait as an exit does.
    this.exit = child ? childExit(child) : null
    const exit = this.exit ? this.exit.promise : leader ? leader.exited : Promise.resolve()
    const gone = (): void => void (this.gone = true)
    this.exited = exit.then(gone, gone)
  }

  phase(sig: number, force: boolean): void {
    this.sig = sig
    this.force = force
    this.signalled = false
  }

  async sweep(): Promise<Array<Promise<unknown>>> {
    if (!this.live) return []
    if (!this.signalled) {
      this.signalled = true
      this.signal()
    }
    return this.gone ? [] : [this.exited]
  }

  survivors(): number[] {
    return this.live && !this.gone ? [this.target.pid] : []
  }

  targetGone(): boolean {
    return this.gone
  }

  close(): void {
    this.exit?.dispose()
    if (this.target.ownLeader) this.target.leader?.close()
  }

  /** The graceful phase asks the launcher to end its job; else, and on escalation, TerminateProcess. */
  private signal(): void {
    const binding = nativeBinding()
    if (!this.force && this.job && binding?.jobStop) {
      let asked = false
      try {
        asked = binding.jobStop(this.target.pid)
      } catch (err) {
        this.journal.degraded(err)
      }
      if (asked) return this.record(true)
    }
    // Not asked (no launcher event yet): TerminateProcess of the launcher; the kernel ends its job.
    if (this.terminate()) this.record(false)
  }

  /** TerminateProcess through the pin; false when the process had already gone. */
  private terminate(): boolean {
    try {
      this.target.leader!.signal(this.sig)
      return true
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'ESRCH') this.journal.degraded(err)
      return false
    }
  }

  private record(job: boolean): void {
    const sent = { signal: signalName(this.sig)!, atMs: this.journal.elapsed(), processes: 1, ...(job ? { job: true } : {}) }
    this.journal.sent(this.fields, sent)
  }
}
