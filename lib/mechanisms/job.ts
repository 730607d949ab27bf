/**
 * createJob(): a Windows Job object with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE and no breakaway, the
 * group that cannot be escaped. Every process a member creates joins it, and when this process
 * dies by any means the kernel closes the job's last handle and kills every member, grandchildren
 * included. A child already in libuv's job (Node's spawn puts every child there) is nested.
 *
 * Assigning after the spawn leaves a window in which the child may start processes outside the
 * job; assign before the child can act (e.g. it waits for a go from you) until reapkit's spawn
 * does this for you on Windows. Elsewhere createJob() throws ENOTSUP: process groups, the
 * parent-death signal and the supervisor play this part on POSIX.
 */
import { rangeError, systemError } from '../ground/errors'
import { nativeBinding, type NativeJob } from '../ground/native'
import { validatePid } from '../ground/validate'

export interface Job {
  /** True once close() was called. */
  readonly closed: boolean
  /** Puts process `pid` (your own, still running child) in the job. ESRCH once it has exited. */
  assign(pid: number): void
  /** Ends every member at once (TerminateJobObject) with `exitCode` (default 1). */
  terminate(exitCode?: number): void
  /** The pids of the members still running (JobObjectBasicProcessIdList). */
  pids(): number[]
  /** Closes the handle: the kernel kills every member still running. Idempotent. */
  close(): void
}

/** A new kill-on-close Job object (Windows only; ENOTSUP elsewhere). */
export function createJob(): Job {
  const binding = process.platform === 'win32' ? nativeBinding() : null
  if (!binding?.Job) {
    throw systemError(
      'ENOTSUP',
      'CreateJobObject',
      process.platform === 'win32' ? 'the reapkit native addon is not loaded' : 'Job objects exist on Windows only',
    )
  }
  const native: NativeJob = new binding.Job()
  return {
    get closed() {
      return native.closed
    },
    assign: (pid) => native.assign(validatePid(pid)),
    terminate(exitCode = 1) {
      if (!Number.isInteger(exitCode) || exitCode < 0 || exitCode > 0x7fffffff) {
        throw rangeError('ERR_OUT_OF_RANGE', `The value of "exitCode" is out of range. It must be an integer >= 0. Received ${exitCode}`)
      }
      native.terminate(exitCode)
    },
    pids: () => native.pids(),
    close: () => native.close(),
  }
}
