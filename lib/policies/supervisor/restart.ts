/**
 * Restart policies for the Supervisor's children (off by default): when a child that the
 * supervisor did not ask to stop exits, start it again ('on-failure': only after a failure;
 * 'always': after any exit), after an exponential backoff with jitter and a cap, and give it up
 * once it needed more than `maxRestarts` restarts within `windowMs` (Erlang/OTP's intensity and
 * period). Pure policy and the one backoff timer: the Supervisor decides when an exit counts.
 */
import { rangeError, typeError } from '../../ground/errors'
import { describe, validateMs, validateOptions } from '../../ground/validate'

export type RestartPolicy = 'never' | 'on-failure' | 'always'

export interface BackoffOptions {
  /** The wait before the first restart in a window. Default 100 ms. */
  initialMs?: number
  /** The longest wait. Default 30000 ms. */
  maxMs?: number
  /** Each restart within the window waits this many times longer than the last. Default 2. */
  factor?: number
  /** The wait is shortened by a random part of up to this fraction of itself (0..1). Default 0.1. */
  jitter?: number
}

export interface IntensityOptions {
  /** At most this many restarts within `windowMs`; one more gives the child up. Default 5. */
  maxRestarts?: number
  /** The window. Default 60000 ms. */
  windowMs?: number
}

export interface RestartOptions {
  /** Default 'never'. */
  restart?: RestartPolicy
  backoff?: BackoffOptions
  intensity?: IntensityOptions
}

export interface RestartSpec {
  policy: Exclude<RestartPolicy, 'never'>
  initialMs: number
  maxMs: number
  factor: number
  jitter: number
  maxRestarts: number
  windowMs: number
}

/**
 * Why an incarnation was started: the first start, or a restart after a failure (a failed start
 * included), a clean exit, a stop for failed health checks, or a stop for not being ready in time.
 */
export type StartReason = 'start' | 'failure' | 'exit' | 'unhealthy' | 'not-ready' | 'requested'

export type RestartDecision =
  | { action: 'none' }
  | { action: 'restart'; delayMs: number; reason: Exclude<StartReason, 'start'> }
  | { action: 'give-up' }

function number(value: unknown, name: string, min: number, max: number, integer = false): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "${name}" option must be a number. Received ${describe(value)}`)
  }
  if (value < min || value > max || (integer && !Number.isSafeInteger(value))) {
    throw rangeError('ERR_OUT_OF_RANGE', `The value of "${name}" is out of range. It must be ${integer ? 'an integer ' : ''}>= ${min} and <= ${max}. Received ${value}`)
  }
  return value
}

/** The restart options of one spawn(), validated (before anything starts); null for 'never'. */
export function restartSpec(options: RestartOptions): RestartSpec | null {
  const { restart = 'never' } = options
  if (restart !== 'never' && restart !== 'on-failure' && restart !== 'always') {
    throw typeError('ERR_INVALID_ARG_VALUE', `The "restart" option must be 'never', 'on-failure' or 'always'. Received ${describe(restart)}`)
  }
  const backoff = validateOptions(options.backoff, 'backoff')
  const intensity = validateOptions(options.intensity, 'intensity')
  const spec: Omit<RestartSpec, 'policy'> = {
    initialMs: validateMs(backoff.initialMs, 'backoff.initialMs') ?? 100,
    maxMs: validateMs(backoff.maxMs, 'backoff.maxMs') ?? 30_000,
    factor: number(backoff.factor, 'backoff.factor', 1, 1000) ?? 2,
    jitter: number(backoff.jitter, 'backoff.jitter', 0, 1) ?? 0.1,
    maxRestarts: number(intensity.maxRestarts, 'intensity.maxRestarts', 0, 2 ** 31 - 1, true) ?? 5,
    windowMs: validateMs(intensity.windowMs, 'intensity.windowMs') ?? 60_000,
  }
  return restart === 'never' ? null : { policy: restart, ...spec }
}

/** A failure: a nonzero exit code, or a signal the supervisor did not send. */
export const isFailure = (code: number | null, signal: NodeJS.Signals | null): boolean => signal !== null || code !== 0

/**
 * Whether a restart at `t` still counts at `now` in a window of `windowMs` (null: no window known,
 * it counts). A time in the future, from a clock stepped back, never does: it would count forever.
 */
export function withinWindow(t: number, now: number, windowMs: number | null): boolean {
  return t <= now && (windowMs === null || now - t < windowMs)
}

/**
 * One child's restart state: the restarts within the window, and the backoff wait when one is
 * pending. The wait is one timer (an immediate without backoff), cleared by cancel() at once.
 */
export class Restarter {
  readonly spec: RestartSpec
  /** When each restart within the window happened (ms since the epoch), oldest first. */
  #recent: number[]
  /** The backoff's timer, or the immediate of a restart without backoff; set while a restart waits. */
  #timer: { kind: 'timeout'; id: NodeJS.Timeout } | { kind: 'immediate'; id: NodeJS.Immediate } | undefined
  /** Which schedule() call is current: a wait that is no longer current (cancelled, or scheduled over) starts nothing. */
  #sequence = 0

  constructor(spec: RestartSpec, recent: readonly number[] = []) {
    this.spec = spec
    // Only the newest maxRestarts can matter: one more than that within the window gives it up.
    this.#recent = spec.maxRestarts === 0 ? [] : recent.slice(-spec.maxRestarts)
  }

  /**
   * The restarts still inside the window (what a state file carries to the next incarnation). A
   * time in the future (the clock was stepped back) is dropped: it would stay in the window forever.
   */
  recent(now = Date.now()): number[] {
    this.#prune(now)
    return [...this.#recent]
  }

  /**
   * Drops the restarts that left the window, in place. The times are in order (each is pushed as
   * `now` after every later one was dropped), so the expired ones are at the head: a crash loop under
   * a large maxRestarts pays for what leaves, not a walk over the whole window at every restart.
   */
  #prune(now: number): void {
    const times = this.#recent
    if (times.length > 0 && times[times.length - 1]! > now) {
      this.#recent = times.filter((t) => withinWindow(t, now, this.spec.windowMs)) // the clock was stepped back
      return
    }
    let expired = 0
    while (expired < times.length && !withinWindow(times[expired]!, now, this.spec.windowMs)) expired++
    if (expired > 0) times.splice(0, expired)
  }

  get pending(): boolean {
    return this.#timer !== undefined
  }

  /**
   * What to do after an exit the supervisor did not ask for, or after its own stop for failed health
   * checks (`stoppedFor` true or 'unhealthy') or for not being ready in time ('not-ready'): such a
   * stop is a failure whatever the exit code. Counts the restart it decides.
   */
  decide(code: number | null, signal: NodeJS.Signals | null, stoppedFor: boolean | 'unhealthy' | 'not-ready' = false, now = Date.now(), random = Math.random): RestartDecision {
    const cause = stoppedFor === true ? 'unhealthy' : stoppedFor || null
    const failed = cause !== null || isFailure(code, signal)
    if (this.spec.policy === 'on-failure' && !failed) return { action: 'none' }
    this.#prune(now)
    const inWindow = this.#recent.length
    if (inWindow >= this.spec.maxRestarts) return { action: 'give-up' }
    this.#recent.push(now)
    const reason = cause ?? (failed ? 'failure' : 'exit')
    return { action: 'restart', delayMs: backoffMs(this.spec, inWindow, random), reason }
  }

  /** Runs `start` after `delayMs` and after `before` settles, unless cancel() comes first. */
  schedule(delayMs: number, before: Promise<unknown>, start: () => void): void {
    const sequence = ++this.#sequence
    // No backoff: an immediate, not setTimeout(0) (1 ms at the soonest in Node, most of a restart's
    // latency beside a hand-rolled on('exit', spawn): bench/restart.mjs), and not nothing: a start
    // that fails at once (ENOENT, EMFILE) emits 'error' on the next tick, and a restart chained on
    // microtasks alone would never let the event loop turn (no timer, no I/O) until the give-up.
    const waited = new Promise<void>((res) => {
      this.#timer = delayMs > 0 ? { kind: 'timeout', id: setTimeout(res, delayMs) } : { kind: 'immediate', id: setImmediate(res) }
    })
    void Promise.all([waited, before.catch(() => {})]).then(() => {
      // A cancel() since, or a newer schedule() (after a cancel, while this one's `before` was still
      // pending), owns the state now: this one starts nothing.
      if (sequence !== this.#sequence) return
      this.#timer = undefined
      start()
    })
  }

  /** Cancels a pending wait at once (its timer cleared); true if there was one. */
  cancel(): boolean {
    const timer = this.#timer
    if (timer === undefined) return false
    if (timer.kind === 'timeout') clearTimeout(timer.id)
    else clearImmediate(timer.id)
    this.#timer = undefined
    this.#sequence++
    return true
  }
}

/** The n-th restart within the window (from 0) waits initial * factor^n, capped, less jitter. */
export function backoffMs(spec: RestartSpec, n: number, random: () => number = Math.random): number {
  const base = Math.min(spec.maxMs, spec.initialMs * spec.factor ** n)
  return Math.round(base * (1 - spec.jitter * random()))
}
