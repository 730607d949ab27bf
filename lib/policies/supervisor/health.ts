/**
 * Health checks for the Supervisor's children (optional, per child): a check, any async function,
 * run every `intervalMs` (from one check's end to the next one's start) and bounded by `timeoutMs`.
 * `failures` failures in a row make the child unhealthy: the Supervisor then stops it with the
 * bounded close, and its restart policy decides what follows. This catches the wedged server that
 * still holds its pipes, which no exit ever reports.
 */
import type { ChildProcess } from 'node:child_process'
import { TimeoutError, rangeError, typeError } from '../../ground/errors'
import { describe, validateMs, validateOptions } from '../../ground/validate'
import type { ProcessRecord } from './record'

export interface HealthCheckContext {
  child: ChildProcess
  /** A copy of the child's record. */
  record: ProcessRecord
  /** Aborted when the check outlasts `timeoutMs` (or the child stops): end what you started. */
  signal: AbortSignal
}

export interface HealthOptions {
  /** Throws, rejects, or outlasts `timeoutMs`: a failure. Anything else: healthy. */
  check: (context: HealthCheckContext) => unknown
  /** From one check's end to the next one's start. Default 10000 ms. */
  intervalMs?: number
  /** One check's bound. Default 5000 ms. */
  timeoutMs?: number
  /** Failures in a row that make the child unhealthy. Default 3. */
  failures?: number
}

export interface HealthSpec {
  check: HealthOptions['check']
  intervalMs: number
  timeoutMs: number
  failures: number
}

/** The health option of one spawn(), validated before anything starts; null without one. */
export function healthSpec(value: HealthOptions | undefined): HealthSpec | null {
  if (value === undefined) return null
  const options = validateOptions(value, 'health')
  if (typeof options.check !== 'function') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "health.check" option must be a function. Received ${describe(options.check)}`)
  }
  const failures = options.failures ?? 3
  if (typeof failures !== 'number' || !Number.isSafeInteger(failures) || failures < 1) {
    throw rangeError('ERR_OUT_OF_RANGE', `The value of "health.failures" is out of range. It must be an integer >= 1. Received ${describe(failures)}`)
  }
  return {
    check: options.check,
    intervalMs: validateMs(options.intervalMs, 'health.intervalMs') ?? 10_000,
    timeoutMs: validateMs(options.timeoutMs, 'health.timeoutMs') ?? 5000,
    failures,
  }
}

export interface HealthHooks {
  context(): { child: ChildProcess; record: ProcessRecord }
  /** One failed check: its error and how many in a row. */
  failed(error: unknown, inARow: number): void
  /** `failures` in a row: the monitor has stopped itself. */
  unhealthy(): void
}

/**
 * One incarnation's checks: one timer or one check at a time, until stop(). A check that outlasts
 * its timeout and ignores its signal is not waited for, but no other starts while it is pending:
 * each tick meanwhile counts as a failure, so such a check makes the child unhealthy, bounded.
 */
export class HealthMonitor {
  readonly #spec: HealthSpec
  readonly #hooks: HealthHooks
  #timer: NodeJS.Timeout | undefined
  readonly #stopped = new AbortController()
  #inARow = 0
  /** A check that outlasted its timeout and ignored its signal: none starts while it is pending. */
  #overdue: Promise<unknown> | null = null

  constructor(spec: HealthSpec, hooks: HealthHooks) {
    this.#spec = spec
    this.#hooks = hooks
    this.#next()
  }

  /** No further check; one in flight is aborted and its result ignored. */
  stop(): void {
    clearTimeout(this.#timer)
    this.#stopped.abort()
  }

  #next(): void {
    if (this.#stopped.signal.aborted) return
    // Unref'd: health checks alone never keep the host running.
    this.#timer = setTimeout(() => void this.#run(), this.#spec.intervalMs).unref()
  }

  async #run(): Promise<void> {
    const error = await this.#checkOnce()
    if (this.#stopped.signal.aborted) return
    if (error === undefined) {
      this.#inARow = 0
      return this.#next()
    }
    this.#inARow++
    this.#hooks.failed(error, this.#inARow)
    if (this.#inARow < this.#spec.failures) return this.#next()
    this.stop()
    this.#hooks.unhealthy()
  }

  /** undefined: healthy; else why not. */
  async #checkOnce(): Promise<unknown> {
    if (this.#overdue) {
      return new TimeoutError(`The previous health check is still running, past its ${this.#spec.timeoutMs} ms timeout`, this.#spec.timeoutMs)
    }
    const timeout = new AbortController()
    const onStop = (): void => timeout.abort()
    this.#stopped.signal.addEventListener('abort', onStop, { once: true })
    let timer: NodeJS.Timeout | undefined
    const expired = new Promise<'timeout'>((res) => (timer = setTimeout(res, this.#spec.timeoutMs, 'timeout')))
    try {
      const check = this.#spec.check
      const run = (async () => check({ ...this.#hooks.context(), signal: timeout.signal }))()
      run.catch(() => {}) // a check that rejects after its timeout must not be an unhandled rejection
      const outcome = await Promise.race([run.then(() => 'ok' as const), expired])
      if (outcome === 'ok') return undefined
      timeout.abort()
      const clear = (): void => {
        if (this.#overdue === overdue) this.#overdue = null
      }
      const overdue: Promise<unknown> = run.then(clear, clear)
      this.#overdue = overdue
      return new TimeoutError(`The health check did not settle within ${this.#spec.timeoutMs} ms`, this.#spec.timeoutMs)
    } catch (err) {
      return err ?? new Error('The health check failed')
    } finally {
      clearTimeout(timer)
      this.#stopped.signal.removeEventListener('abort', onStop)
    }
  }
}
