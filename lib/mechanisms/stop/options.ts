/** The options of a stop, validated once, before anything is looked up or signalled. */
import { KILL_CONFIRM_MS_DEFAULT, killGraceMs } from '../../ground/config'
import type { Logger } from '../../ground/logger'
import { type Deadlines, ownTimers } from './deadlines'
import { signalNumber, validateAbortSignal, validateBoolean, validateLogger, validateMs, validateOptions } from '../../ground/validate'
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
  /** Who keeps the phases' deadlines: a timer of the stop's own, or one shared by many stops (deadlines.ts). */
  deadlines: Deadlines
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
  const group = validateBoolean(options.group, 'group')
  // `allowSelf: 'true'` must not quietly read as false (nor anything truthy as true): it guards this process.
  const allowSelf = validateBoolean(options.allowSelf, 'allowSelf') ?? false
  return { first, last, graceMs, confirmMs, abort, group, allowSelf, logger: validateLogger(options.logger), deadlines: ownTimers }
}
