/**
 * Linux prctl: the parent-death signal and the child-subreaper flag. Elsewhere every call throws a
 * system error with code 'ENOTSUP' (and capabilities() says false): never a silent no-op.
 *
 * Caveat of PR_SET_PDEATHSIG: the signal is sent when the *thread* that created this process exits,
 * not when the parent process exits. A process spawned from a Node worker_thread gets it when that
 * worker ends. The setting is cleared by fork (children do not inherit it), by exec of a set-user-ID,
 * set-group-ID or file-capability binary, and by any change of credentials; it survives a plain exec.
 */
import { typeError } from '../ground/errors'
import { requirePosixBinding } from '../ground/native'
import { type SignalLike, signalName, signalNumber, validatePid } from '../ground/validate'

/** Arms (or with `null` / 0, disarms) the signal the kernel sends this process when its parent dies. */
export function setParentDeathSignal(signal: SignalLike | null): void {
  const sig = signal === null ? 0 : signalNumber(signal)
  requirePosixBinding('prctl', 'A parent-death signal').setParentDeathSignal(sig)
}

/** The armed parent-death signal, or null when none is armed. */
export function getParentDeathSignal(): NodeJS.Signals | null {
  return signalName(requirePosixBinding('prctl', 'A parent-death signal').getParentDeathSignal())
}

/**
 * Makes this process a child subreaper (or stops it being one): orphaned descendants are
 * re-parented to it instead of to PID 1, and it must then reap them. Not inherited across fork.
 */
export function setChildSubreaper(on = true): void {
  if (typeof on !== 'boolean') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "on" argument must be of type boolean. Received ${typeof on}`)
  }
  requirePosixBinding('prctl', 'A child subreaper').setChildSubreaper(on)
}

/** Whether this process is a child subreaper. */
export function isChildSubreaper(): boolean {
  return requirePosixBinding('prctl', 'A child subreaper').isChildSubreaper()
}

/**
 * Reaps `pid`, a child of this process, if it has exited: true when it was reaped, false while it
 * still runs; throws ECHILD if it is not a child of ours. For orphans a subreaper has adopted
 * only: never for children spawned through child_process (libuv waits for those by pid itself, and
 * a status taken from under it never reaches their ChildProcess 'exit' event).
 */
export function reapAdopted(pid: number): boolean {
  return requirePosixBinding('waitid', 'Reaping adopted orphans').reapZombie(validatePid(pid))
}
