/**
 * Input validation, always before any syscall: a bad pid, signal or timeout gets a clear
 * TypeError / RangeError and never reaches the kernel, so it can never become a stray signal.
 */
import { existsSync } from 'node:fs'
import { rangeError, typeError } from './errors'
import type { Logger } from './logger'

/** A signal by name ('SIGTERM') or number (15). */
export type SignalLike = NodeJS.Signals | number

let signalNumbers: Record<string, number> | undefined
const signalNames = new Map<number, NodeJS.Signals>()
/**
 * The platform's signals, read from node:os on first use rather than when reapkit loads (node:os
 * costs about 0.1 ms, a fiftieth of require('reapkit')).
 */
function signals(): Record<string, number> {
  if (signalNumbers) return signalNumbers
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  signalNumbers = (require('node:os') as typeof import('node:os')).constants.signals as Record<string, number>
  for (const [name, num] of Object.entries(signalNumbers)) {
    // Several names share a number on some platforms (SIGIOT/SIGABRT, SIGPOLL/SIGIO): keep the first.
    if (!signalNames.has(num)) signalNames.set(num, name as NodeJS.Signals)
  }
  return signalNumbers
}

/** Largest pid the kernel interfaces accept (pid_t is a signed 32-bit integer). */
const PID_MAX = 2 ** 31 - 1

export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'bigint') return `${value}n`
  if (value === null) return 'null'
  if (typeof value === 'object') return `an instance of ${value.constructor?.name ?? 'Object'}`
  return `${typeof value} ${String(value)}`
}

/**
 * A pid we may name in a syscall that acts on a process: an integer in 2..2^31-1. 0, 1 and
 * negative numbers mean "my group", "init" and "a group" to kill(2), and are never accepted here.
 */
export function validatePid(pid: unknown, name = 'pid'): number {
  if (typeof pid !== 'number') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "${name}" argument must be of type number. Received ${describe(pid)}`)
  }
  if (!Number.isInteger(pid)) {
    throw rangeError('ERR_OUT_OF_RANGE', `The value of "${name}" is out of range. It must be an integer. Received ${pid}`)
  }
  if (pid <= 1 || pid > PID_MAX) {
    throw rangeError(
      'ERR_OUT_OF_RANGE',
      `The value of "${name}" is out of range. It must be >= 2 and <= ${PID_MAX} ` +
        `(0, 1 and negative values address groups, init or every process). Received ${pid}`,
    )
  }
  return pid
}

/**
 * True if `pid` names this process: its pid, or (Linux) the id of one of its own threads, which
 * kill(2) accepts too and which would signal this whole process.
 */
export function isSelf(pid: number): boolean {
  if (pid === process.pid) return true
  return process.platform === 'linux' && existsSync(`/proc/self/task/${pid}`)
}

/** A pid for calls that only read or set process-group membership, where 0 means "this process". */
export function validatePidOrSelf(pid: unknown, name = 'pid'): number {
  if (pid === undefined || pid === 0) return 0
  return validatePid(pid, name)
}

/** Signal name -> number, validating. `allowZero` admits signal 0 (an existence check). */
export function signalNumber(signal: unknown, { allowZero = true }: { allowZero?: boolean } = {}): number {
  const numbers = signals()
  if (typeof signal === 'string') {
    const num = numbers[signal]
    if (num !== undefined) return num
  } else if (typeof signal === 'number') {
    if (signal === 0 && allowZero) return 0
    if (Number.isInteger(signal) && signalNames.has(signal)) return signal
  } else {
    throw typeError(
      'ERR_INVALID_ARG_TYPE',
      `The "signal" argument must be of type string or number. Received ${describe(signal)}`,
    )
  }
  const valid = [...signalNames.entries()].map(([num, name]) => `${name} (${num})`).join(', ')
  throw typeError(
    'ERR_UNKNOWN_SIGNAL',
    `Unknown signal: ${String(signal)}. Valid signals: ${allowZero ? '0 (existence check), ' : ''}${valid}`,
  )
}

/** Signal number -> name ('SIGTERM'), or null for 0 / unknown numbers. */
export function signalName(signal: number): NodeJS.Signals | null {
  signals()
  return signalNames.get(signal) ?? null
}

/**
 * A duration option: a finite number >= 0 (milliseconds), or `undefined` for the default.
 * `Infinity` is accepted only where `allowInfinity` says a wait may be unbounded.
 */
export function validateMs(value: unknown, name: string, { allowInfinity = false } = {}): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "${name}" option must be a number of milliseconds. Received ${describe(value)}`)
  }
  if (value < 0 || (Number.isFinite(value) ? value > 2 ** 31 - 1 : !allowInfinity)) {
    throw rangeError(
      'ERR_OUT_OF_RANGE',
      `The value of "${name}" is out of range. It must be >= 0 and <= ${2 ** 31 - 1}${allowInfinity ? ' or Infinity' : ''}. Received ${value}`,
    )
  }
  return value
}

/** An optional AbortSignal option. */
export function validateAbortSignal(signal: unknown, name = 'signal'): AbortSignal | undefined {
  if (signal === undefined) return undefined
  if (typeof signal !== 'object' || signal === null || typeof (signal as AbortSignal).aborted !== 'boolean' ||
      typeof (signal as AbortSignal).addEventListener !== 'function') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "${name}" option must be an AbortSignal. Received ${describe(signal)}`)
  }
  return signal as AbortSignal
}

/**
 * An options argument: an object (or undefined, for the defaults); null or a primitive is refused.
 *
 * Returns a copy of the caller's OWN enumerable properties on a null prototype, as Node reads
 * child_process options (`{ __proto__: null, ...options }`): an option set on Object.prototype by a
 * prototype pollution anywhere in the host (`shell`, `uid`, `cwd`, `graceMs`...) is never read.
 * Nested option objects (a logger, an env) are passed through as they are.
 */
export function validateOptions<T>(value: T, name = 'options'): NonNullable<T> {
  if (value === undefined) return Object.create(null) as NonNullable<T>
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "${name}" argument must be of type object. Received ${describe(value)}`)
  }
  return Object.assign(Object.create(null) as object, value) as NonNullable<T>
}

/** An optional boolean option: undefined, or a boolean; anything else (`'true'`, 1) is refused, never read as truthy. */
export function validateBoolean(value: unknown, name: string): boolean | undefined {
  if (value !== undefined && typeof value !== 'boolean') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "${name}" option must be a boolean. Received ${describe(value)}`)
  }
  return value
}

const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const

/** A logger is undefined (silent) or has the four methods: a wrong one is refused, not silently mute. */
export function validateLogger(logger: unknown): Logger | undefined {
  if (logger === undefined) return undefined
  const ok = typeof logger === 'object' && logger !== null &&
    LOG_LEVELS.every((level) => typeof (logger as Record<string, unknown>)[level] === 'function')
  if (!ok) {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "logger" option must be an object with debug, info, warn and error methods. Received ${describe(logger)}`)
  }
  return logger as Logger
}
