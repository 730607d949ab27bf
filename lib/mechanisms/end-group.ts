/**
 * What exec(), execFile() and fork() do where Node's kill one process: end the child's group.
 *
 * Node's execFile ends a child on `timeout`, on `maxBuffer` and on an abort with `child.kill()`:
 * one signal to one pid. For `exec('sleep 100 & sleep 100', { timeout })` that is the shell alone;
 * both sleeps live on, holding nothing but their own time. reapkit's children lead their own
 * process group, so the same moments end the group: `killSignal` to every member (each pinned,
 * signalled through its pidfd), and SIGKILL to whatever still runs after the kill grace
 * (REAPKIT_KILL_GRACE_MS, default 9 s), as killProcessGracefully does everywhere else.
 */
import type { ChildProcess } from 'node:child_process'
import { inspect } from 'node:util'
import { AbortError, rangeError, typeError } from '../ground/errors'
import { signalNumber } from '../ground/validate'
import { receivedLikeNode } from './spawn-args'
// A direct import: exec and fork are parts themselves (lazy/ accessors are for the eager bundle),
// and their part shares killProcessGracefully's code with the stop's part.
import { killProcessGracefully } from './kill'
import type { SignalLike } from '../ground/validate'

/** Ends `child`'s group with `signal` (then SIGKILL after the grace). Never rejects: a stop that fails leaves Node's own kill. */
export function endGroup(child: ChildProcess, signal: SignalLike): void {
  if (child.pid === undefined) return // never started: its 'error' event says why
  killProcessGracefully(child, { signal }).catch(() => {
    // EPERM (a member became another user's): the leader still had Node's kill, as with Node's exec
  })
}

/**
 * `timeout`, `signal` and `killSignal` as Node's spawn handles them, taken off the options before
 * reapkit's spawn() sees them: checked as Node checks them (before anything runs).
 */
export function readKills(options: { timeout?: unknown; signal?: unknown; killSignal?: unknown } & object): { timeout: number; signal: AbortSignal | undefined; killSignal: SignalLike } {
  const { timeout, signal, killSignal } = options
  if (timeout != null && !(Number.isInteger(timeout) && (timeout as number) >= 0)) {
    throw rangeError('ERR_OUT_OF_RANGE', `The value of "timeout" is out of range. It must be an unsigned integer. Received ${inspect(timeout)}`)
  }
  if (signal !== undefined && (signal === null || typeof signal !== 'object' || !('aborted' in signal))) {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "options.signal" property must be an instance of AbortSignal. ${receivedLikeNode(signal)}`)
  }
  if (killSignal != null && typeof killSignal !== 'string' && typeof killSignal !== 'number') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "options.killSignal" property must be one of type string or number. ${receivedLikeNode(killSignal)}`)
  }
  if (killSignal != null) signalNumber(killSignal, { allowZero: false }) // ERR_UNKNOWN_SIGNAL
  return { timeout: (timeout as number | undefined) ?? 0, signal: signal as AbortSignal | undefined, killSignal: (killSignal as SignalLike | undefined) ?? 'SIGTERM' }
}

/**
 * After the spawn: what Node's spawn does with them, with the group. On the timeout, Node kills
 * the child; on an abort, it kills the child and, if that signal was sent, emits an AbortError
 * (its cause the signal's reason). Here the same, and then the rest of the group (endGroup). One
 * listener on the signal, removed when the child exits, as Node's.
 */
export function applyKills(child: ChildProcess, kills: ReturnType<typeof readKills>): void {
  const { timeout, signal, killSignal } = kills
  if (timeout > 0) {
    let timer: NodeJS.Timeout | undefined = setTimeout(() => {
      timer = undefined
      try {
        child.kill(killSignal)
      } catch (err) {
        child.emit('error', err)
      }
      endGroup(child, killSignal)
    }, timeout)
    child.once('exit', () => timer && clearTimeout(timer))
  }
  if (!signal) return
  const onAbort = (): void => {
    try {
      if (child.kill(killSignal)) child.emit('error', new AbortError(undefined, { cause: signal.reason }))
    } catch (err) {
      child.emit('error', err)
    }
    endGroup(child, killSignal)
  }
  if (signal.aborted) process.nextTick(onAbort)
  else {
    signal.addEventListener('abort', onAbort, { once: true })
    child.once('exit', () => signal.removeEventListener('abort', onAbort))
  }
}
