/**
 * watchExit(target): resolves when a pid, a ChildProcess or a ProcessHandle exits, by kernel event
 * (pidfd / kqueue; for a ChildProcess, libuv's SIGCHLD-driven 'exit'). Every wait can be bounded
 * (`timeoutMs`) and cancelled (`signal`).
 */
import type { ChildProcess } from 'node:child_process'
import { AbortError, ReapkitError, TimeoutError, rangeError, typeError } from '../ground/errors'
import { type ExitInfo, type ExitWatch, type NativeWatch, ProcessHandle, openProcess, registerExit } from './handle'
import { nativeBinding, nativeCapabilities as capabilities } from '../ground/native'
import { isSelf, signalName, validateAbortSignal, validateMs, validatePid, validateOptions } from '../ground/validate'

export type { ExitInfo } from './handle'

/** What watchExit and friends accept: a pid, a ChildProcess, or a handle from openProcess(). */
export type ProcessTarget = number | ChildProcess | ProcessHandle

export interface WatchExitOptions {
  /** Reject with a TimeoutError (code 'ETIMEDOUT') after this many ms. Default: no bound. */
  timeoutMs?: number
  /** Reject with an AbortError (code 'ABORT_ERR') when this signal aborts. */
  signal?: AbortSignal
  /**
   * Keep the event loop alive while this promise is pending. Default true, like Node's
   * `timers/promises`: an awaited wait must not let the process end silently under it. Pass false
   * for a background watch that should not hold the process open. (The passive watchers,
   * ProcessHandle#exited and watchParent, are unref'd unless asked.)
   */
  ref?: boolean
}

/** True for objects shaped like Node's ChildProcess. */
export function isChildProcess(value: unknown): value is ChildProcess {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as ChildProcess).once === 'function' &&
    'exitCode' in value &&
    'signalCode' in value
  )
}

/** Resolves with what is known of the exit of `target` (see ExitInfo). */
export function watchExit(target: ProcessTarget, options: WatchExitOptions = {}): Promise<ExitInfo> {
  try {
    return start(target, validateOptions(options))
  } catch (err) {
    return Promise.reject(err)
  }
}

function start(target: ProcessTarget, options: WatchExitOptions): Promise<ExitInfo> {
  const timeoutMs = validateMs(options.timeoutMs, 'timeoutMs', { allowInfinity: true })
  const abort = validateAbortSignal(options.signal)
  const ref = options.ref !== false

  if (isChildProcess(target)) return bounded(childExit(target), timeoutMs, abort, ref, () => {})
  if (target instanceof ProcessHandle) {
    if (ref) ProcessHandle.hold(target, 1)
    return bounded(target.exited, timeoutMs, abort, ref, () => {
      if (ref) ProcessHandle.hold(target, -1)
    })
  }
  if (typeof target !== 'number') {
    throw typeError(
      'ERR_INVALID_ARG_TYPE',
      'The "target" argument must be a pid (number), a ChildProcess or a ProcessHandle from openProcess()',
    )
  }
  const pid = validatePid(target)
  if (abort?.aborted) return Promise.reject(abortError(abort))
  if (nativeBinding() && capabilities().exitWatch !== 'poll') return watchPid(pid, timeoutMs, abort, ref)
  let handle: ProcessHandle
  try {
    handle = openProcess(pid, { allowSelf: false })
  } catch (err) {
    // Gone before we could pin it: it has exited (and been reaped); nothing more is known.
    if ((err as { code?: string }).code === 'ESRCH') return Promise.resolve({ pid, code: null, signal: null })
    throw err
  }
  if (ref) handle.ref()
  return bounded(handle.exited, timeoutMs, abort, ref, () => handle.close())
}

// A bare pid on an exit-watching kernel: no handle of its own; the watch joins any registration
// the same running process already has (one descriptor for all the watches of a process). Without
// a bound, the exit settles the returned promise directly (one promise per watch, no chain), which
// keeps 10,000 exits at once cheap for the event loop.
function watchPid(pid: number, timeoutMs: number | undefined, abort: AbortSignal | undefined, ref: boolean): Promise<ExitInfo> {
  if (pid === process.pid) throw selfError(pid)
  let resolve!: (info: ExitInfo) => void
  const promise = new Promise<ExitInfo>((res) => (resolve = res))
  let watch: NativeWatch
  try {
    watch = registerExit(pid, (code, signal) => resolve({ pid, code, signal: signal === null ? null : signalName(signal) }))
  } catch (err) {
    const code = (err as { code?: string }).code
    // Gone before we could pin it: it has exited (and been reaped); nothing more is known.
    if (code === 'ESRCH') return Promise.resolve({ pid, code: null, signal: null })
    // pidfd_open refuses a thread id (ENOENT on 6.x kernels, EINVAL on some older ones): one of
    // our own threads is "this process".
    if ((code === 'ENOENT' || code === 'EINVAL') && isSelf(pid)) throw selfError(pid)
    throw err
  }
  if (ref) watch.ref(1)
  if ((timeoutMs === undefined || timeoutMs === Infinity) && !abort) return promise
  return bounded(promise, timeoutMs, abort, ref, () => watch.cancel())
}

function selfError(pid: number): RangeError {
  return rangeError('ERR_REAPKIT_SELF', `Refusing a handle on this process itself (pid ${pid}); pass { allowSelf: true }`)
}

function childExit(child: ChildProcess): { promise: Promise<ExitInfo>; cancel(): void } | Promise<ExitInfo> {
  const pid = child.pid
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ pid: pid ?? 0, code: child.exitCode, signal: child.signalCode })
  }
  if (pid === undefined) {
    throw new ReapkitError('ERR_REAPKIT_NOT_SPAWNED', 'The child process has no pid: it was never spawned (see its "error" event)')
  }
  let onExit!: (code: number | null, signal: NodeJS.Signals | null) => void
  const promise = new Promise<ExitInfo>((resolve) => {
    onExit = (code, signal) => resolve({ pid, code, signal })
    child.once('exit', onExit)
  })
  return { promise, cancel: () => child.off('exit', onExit) }
}

function abortError(signal: AbortSignal): AbortError {
  return new AbortError('The exit watch was aborted', { cause: signal.reason })
}

/** Races `source` against the timeout and the abort signal; `cleanup` runs once, whatever wins. */
function bounded(
  source: Promise<ExitInfo> | { promise: Promise<ExitInfo>; cancel(): void },
  timeoutMs: number | undefined,
  abort: AbortSignal | undefined,
  ref: boolean,
  cleanup: () => void,
): Promise<ExitInfo> {
  const promise = source instanceof Promise ? source : source.promise
  const cancelSource = source instanceof Promise ? () => {} : source.cancel
  if (abort?.aborted) {
    cancelSource()
    cleanup()
    return Promise.reject(abortError(abort))
  }
  if ((timeoutMs === undefined || timeoutMs === Infinity) && !abort) {
    return promise.finally(cleanup)
  }
  return new Promise<ExitInfo>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined
    const finish = (): void => {
      if (timer) clearTimeout(timer)
      abort?.removeEventListener('abort', onAbort)
      cleanup()
    }
    const onAbort = (): void => {
      finish()
      cancelSource()
      reject(abortError(abort!))
    }
    if (timeoutMs !== undefined && timeoutMs !== Infinity) {
      timer = setTimeout(() => {
        finish()
        cancelSource()
        reject(new TimeoutError(`The process did not exit within ${timeoutMs} ms`, timeoutMs))
      }, timeoutMs)
      if (!ref) timer.unref()
    }
    abort?.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (info) => {
        finish()
        resolve(info)
      },
      (err: unknown) => {
        finish()
        reject(err)
      },
    )
  })
}

export type { ExitWatch }
