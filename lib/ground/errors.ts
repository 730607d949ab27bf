/**
 * Errors, in the shapes Node users know: system errors carry `code` ('ESRCH'), negative `errno`
 * and `syscall` (exactly like the errors of Node's own `process.kill`); argument errors are
 * TypeError / RangeError with Node's `ERR_*` codes; reapkit's own errors have a `code` too.
 */
/** A Node-style system error: `code` ('ESRCH'), `errno` (negative, libuv's convention), `syscall`. */
export interface SystemError extends Error {
  code: string
  errno: number
  syscall: string
}

/** Base class of errors reapkit raises itself (not the kernel): always has a string `code`. */
export class ReapkitError extends Error {
  readonly code: string
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'ReapkitError'
    this.code = code
  }
}

/** A bounded wait ran out (`code: 'ETIMEDOUT'`). */
export class TimeoutError extends ReapkitError {
  readonly timeoutMs: number
  constructor(message: string, timeoutMs: number) {
    super('ETIMEDOUT', message)
    this.name = 'TimeoutError'
    this.timeoutMs = timeoutMs
  }
}

/** A wait cancelled through an AbortSignal, shaped like Node's own AbortError. */
export class AbortError extends Error {
  readonly code = 'ABORT_ERR'
  constructor(message = 'The operation was aborted', options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'AbortError'
  }
}

/** Builds a system error for a condition found without a syscall (e.g. ENOTSUP, or ESRCH known). */
export function systemError(code: string, syscall: string, detail?: string, cause?: unknown): SystemError {
  // node:os loads here, when an error is made, not with reapkit.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const errno = ((require('node:os') as typeof import('node:os')).constants.errno as Record<string, number>)[code]
  const message = `${syscall} ${code}${detail ? ` (${detail})` : ''}`
  const err = new Error(message, cause === undefined ? undefined : { cause }) as SystemError
  err.code = code
  err.errno = typeof errno === 'number' ? -errno : 0
  err.syscall = syscall
  return err
}

/** TypeError with Node's `code` property (`ERR_INVALID_ARG_TYPE`, `ERR_UNKNOWN_SIGNAL`, ...). */
export function typeError(code: string, message: string): TypeError & { code: string } {
  const err = new TypeError(message) as TypeError & { code: string }
  // The stack starts at the caller, as Node's own argument errors do: an uncaught one then prints
  // the caller's `throw` line and names the check that failed as its top frame.
  Error.captureStackTrace(err, typeError)
  return withCode(err, code)
}

/** Error with Node's `code` property, for Node's plain `Error [ERR_X]` errors (ERR_CHILD_PROCESS_IPC_REQUIRED). */
export function codedError(code: string, message: string): Error & { code: string } {
  const err = new Error(message)
  Error.captureStackTrace(err, codedError)
  return withCode(err, code)
}

/** RangeError with Node's `code` property (`ERR_OUT_OF_RANGE`, or reapkit's refusals). */
export function rangeError(code: string, message: string): RangeError & { code: string } {
  const err = new RangeError(message) as RangeError & { code: string }
  Error.captureStackTrace(err, rangeError)
  return withCode(err, code)
}

/**
 * Node's own argument errors print as `TypeError [ERR_X]: message` (String(err)), and tests match
 * that (`assert.throws(fn, /ERR_OUT_OF_RANGE/)` reads String(err)): ours print the same.
 */
function withCode<E extends Error>(err: E, code: string): E & { code: string } {
  const coded = err as E & { code: string }
  coded.code = code
  Object.defineProperty(coded, 'toString', { value: () => `${coded.name} [${coded.code}]: ${coded.message}`, enumerable: false, configurable: true, writable: true })
  return coded
}
