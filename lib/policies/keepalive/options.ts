/**
 * The keepalive's options, checked and resolved to their defaults before anything is installed: a
 * typo in a signal name would otherwise never start the drain.
 */
import { drainGraceMs } from '../../ground/config'
import { typeError } from '../../ground/errors'
import type { Logger } from '../../ground/logger'
import { describe, signalNumber, validateMs, validateOptions } from '../../ground/validate'
import type { KeepaliveOptions, ShutdownReport } from './types'

export interface ShutdownHook {
  hook: (report: ShutdownReport) => unknown
  timeoutMs: number
}

export interface ResolvedOptions {
  graceMs: number
  hookTimeoutMs: number
  flushTimeoutMs: number
  signals: NodeJS.Signals[]
  stdin: boolean
  parentDeath: boolean
  exit: boolean
  finalLine: boolean
  /** The onShutdown option's hooks, each with the default bound. */
  hooks: ShutdownHook[]
  /** The onDrain option's listener, if any. */
  drainListeners: Array<(reason: string) => unknown>
  logger: Logger | undefined
}

export function resolveOptions(input: KeepaliveOptions): ResolvedOptions {
  const options = validateOptions(input)
  // In this order, as they always were checked (the first bad one is the one reported).
  const graceMs = validateMs(options.graceMs, 'graceMs') ?? drainGraceMs()
  const hookTimeoutMs = validateMs(options.hookTimeoutMs, 'hookTimeoutMs') ?? 2000
  const flushTimeoutMs = validateMs(options.flushTimeoutMs, 'flushTimeoutMs') ?? 2000
  return {
    graceMs,
    hookTimeoutMs,
    flushTimeoutMs,
    signals: resolveSignals(options.signals),
    stdin: options.stdin !== false,
    parentDeath: options.parentDeath !== false,
    exit: options.exit !== false,
    finalLine: options.finalLine !== false,
    hooks: hooksOf(options.onShutdown, hookTimeoutMs),
    drainListeners: options.onDrain ? [options.onDrain] : [],
    logger: options.logger,
  }
}

function resolveSignals(option: KeepaliveOptions['signals']): NodeJS.Signals[] {
  const signals = option === false ? [] : (option ?? ['SIGTERM', 'SIGINT', 'SIGHUP'])
  if (!Array.isArray(signals)) throw typeError('ERR_INVALID_ARG_TYPE', 'The "signals" option must be an array of signal names or false')
  for (const sig of signals) {
    if (typeof sig !== 'string') {
      throw typeError('ERR_INVALID_ARG_TYPE', `The "signals" option must list signal names. Received ${describe(sig)}`)
    }
    signalNumber(sig, { allowZero: false })
    if (sig === 'SIGKILL' || sig === 'SIGSTOP') {
      throw typeError('ERR_INVALID_ARG_VALUE', `The "signals" option cannot include ${sig}: it cannot be caught`)
    }
  }
  return signals
}

function hooksOf(option: KeepaliveOptions['onShutdown'], timeoutMs: number): ShutdownHook[] {
  if (typeof option === 'function') return [{ hook: option, timeoutMs }]
  if (Array.isArray(option)) return option.map((hook) => ({ hook, timeoutMs }))
  return []
}
