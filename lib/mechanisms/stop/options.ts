/** The options of a stop, validated once, before anything is looked up or signalled. */
import { KILL_CONFIRM_MS_DEFAULT, killGraceMs } from '../../ground/config'
import { typeError } from '../../ground/errors'
import type { Logger } from '../../ground/logger'
import { describe, signalNumber, validateAbortSignal, validateMs, validateOptions } from '../../ground/validate'
import type { KillOptions } from './types'

export interface StopOptions {
  /** The graceful signal, as a number. */
  first: number
  /** The kill signal, as a number. */
  last: number
  graceMs: number
  confirmMs: number
  abort: AbortSignal | undefined
  group: boolean | undefined
  allowSelf: boolean
  logger: Logger | undefined
}

/** Reads the caller's own options (a null-prototype copy) into a StopOptions; bad input throws here. */
export function readKillOptions(input: KillOptions): StopOptions {
  const options = validateOptions(input)
  // Signal 0 sends nothing: as a stop signal it would report a stop that never happened.
  const first = signalNumber(options.signal ?? 'SIGTERM', { allowZero: false })
  const last = signalNumber(options.killSignal ?? 'SIGKILL', { allowZero: false })
  const graceMs = validateMs(options.graceMs, 'graceMs') ?? killGraceMs()
  const confirmMs = validateMs(options.confirmMs, 'confirmMs') ?? KILL_CONFIRM_MS_DEFAULT
  const abort = validateAbortSignal(options.abortSignal, 'abortSignal')
  const group = optionalBoolean(options.group, 'group')
  // `allowSelf: 'true'` must not quietly read as false (nor anything truthy as true): it guards this process.
  const allowSelf = optionalBoolean(options.allowSelf, 'allowSelf') ?? false
  return { first, last, graceMs, confirmMs, abort, group, allowSelf, logger: validateLogger(options.logger) }
}

function optionalBoolean(value: unknown, name: string): boolean | undefined {
  if (value !== undefined && typeof value !== 'boolean') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "${name}" option must be a boolean. Received ${describe(value)}`)
  }
  return value
}

const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const

/** A logger is undefined (silent) or has the four methods: a wrong one is refused, not silently mute. */
function validateLogger(logger: unknown): Logger | undefined {
  if (logger === undefined) return undefined
  const ok = typeof logger === 'object' && logger !== null &&
    LOG_LEVELS.every((level) => typeof (logger as Record<string, unknown>)[level] === 'function')
  if (!ok) {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "logger" option must be an object with debug, info, warn and error methods. Received ${describe(logger)}`)
  }
  return logger as Logger
}
