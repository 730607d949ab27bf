/**
 * Process groups and signals: getpgid / setpgid / killpg / kill, validated before any syscall.
 * Refused with a RangeError: pids <= 1 (kill(0) and kill(-1) address whole groups or every
 * process), killpg(0) and killpg(1), and this process or its own group unless `allowSelf: true`.
 */
import { rangeError } from './errors'
import { nativeBinding, requirePosixBinding } from './native'
import { isSelf, type SignalLike, signalNumber, validatePid, validatePidOrSelf, validateOptions } from './validate'

export interface SignalOptions {
  /** Permit signalling this process itself (kill) or its own process group (killpg). Default false. */
  allowSelf?: boolean
}

/** Process group id of `pid` (0 or omitted: this process). Throws ESRCH for an unknown pid. */
export function getpgid(pid?: number): number {
  const p = validatePidOrSelf(pid)
  return requirePosixBinding('getpgid', 'A process group').getpgid(p)
}

/**
 * Moves `pid` (0: this process) into process group `pgid` (0: a new group led by `pid`). The kernel
 * allows it only for this process and its children that have not yet exec'd (EACCES otherwise).
 */
export function setpgid(pid: number = 0, pgid: number = 0): void {
  const p = validatePidOrSelf(pid)
  const g = validatePidOrSelf(pgid, 'pgid')
  requirePosixBinding('setpgid', 'A process group').setpgid(p, g)
}

/** Sends `signal` (default SIGTERM; 0 checks existence) to process `pid`. */
export function kill(pid: number, signal: SignalLike = 'SIGTERM', options: SignalOptions = {}): void {
  options = validateOptions(options)
  const p = validatePid(pid)
  const sig = signalNumber(signal)
  if (isSelf(p) && options.allowSelf !== true) {
    throw rangeError(
      'ERR_REAPKIT_SELF',
      `Refusing to signal this process itself (pid ${p} is this process or one of its threads); pass { allowSelf: true } to do so`,
    )
  }
  const binding = nativeBinding()
  if (binding && process.platform !== 'win32') binding.kill(p, sig)
  else process.kill(p, sig) // plain kill(2) (Windows: libuv's TerminateProcess), after the same validation
}

/**
 * Sends `signal` (default SIGTERM; 0 checks whether the group has members) to every process in
 * group `pgid`. Note that kill(-pgid, 0) also succeeds while only zombies remain in the group.
 */
export function killpg(pgid: number, signal: SignalLike = 'SIGTERM', options: SignalOptions = {}): void {
  options = validateOptions(options)
  const g = validatePid(pgid, 'pgid')
  const sig = signalNumber(signal)
  const native = requirePosixBinding('killpg', 'A process group')
  if (options.allowSelf !== true && g === native.getpgid(0)) {
    throw rangeError(
      'ERR_REAPKIT_SELF',
      `Refusing to signal this process's own process group (pgid ${g}); pass { allowSelf: true } to do so`,
    )
  }
  native.killpg(g, sig)
}
