/**
 * Readiness (spawn's `ready`): a child is 'starting' until it is ready, within a bound. Ready when
 * each condition given holds: a line of its stdout matches, and a check passes (any async function,
 * its health check with 'health', an HTTP probe with httpProbe()). Not ready within `timeoutMs` is a
 * clear failure: the supervisor stops it (reason 'not-ready') and its restart policy decides.
 */
import { TimeoutError, rangeError, typeError } from '../../ground/errors'
import { describe, validateMs, validateOptions } from '../../ground/validate'
import type { HealthCheckContext, HealthSpec } from './health'
import { lines, type OutputSource } from './output-source'

export interface ReadinessOptions {
  /** Ready once a line the child writes on stdout matches (a RegExp, or a string it contains). Needs stdout piped. */
  stdout?: RegExp | string
  /**
   * Ready once this check passes: any function, as `health.check` (a throw or a rejection: not yet),
   * or 'health' for the child's own health check. E.g. httpProbe(url).
   */
  check?: ((context: HealthCheckContext) => unknown) | 'health'
  /** From one check's end to the next one's start. Default 250 ms. */
  intervalMs?: number
  /**
   * One check's bound: a check not settled by then has its signal aborted and counts as "not yet"
   * (the next one starts `intervalMs` later, whether or not that one heeded its signal). Default:
   * with `check: 'health'` the health check's `timeoutMs`, otherwise 5000 ms or `timeoutMs` if less.
   */
  attemptTimeoutMs?: number
  /** The bound: not ready by then, it is stopped. Default 30000 ms. */
  timeoutMs?: number
}

export const DEFAULT_READY_TIMEOUT_MS = 30_000

export interface ReadySpec {
  stdout: RegExp | string | null
  check: ((context: HealthCheckContext) => unknown) | null
  intervalMs: number
  /** One check's bound (the readiness bound `timeoutMs` ends the whole wait). */
  attemptTimeoutMs: number
  timeoutMs: number
}

/** A ready check's default bound per attempt (at most the whole wait's). */
export const DEFAULT_READY_ATTEMPT_MS = 5000

/** The `ready` option of one spawn(), validated before anything starts; null without one. */
export function readySpec(value: ReadinessOptions | undefined, health: HealthSpec | null, stdoutPiped: boolean): ReadySpec | null {
  if (value === undefined) return null
  const options = validateOptions(value, 'ready')
  const { stdout, check } = options
  if (stdout !== undefined && typeof stdout !== 'string' && !(stdout instanceof RegExp)) {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "ready.stdout" option must be a RegExp or a string. Received ${describe(stdout)}`)
  }
  if (stdout !== undefined && !stdoutPiped) {
    throw typeError('ERR_INVALID_ARG_COMBINATION', 'The "ready.stdout" option needs the child\'s stdout piped (stdio "pipe")')
  }
  if (check !== undefined && check !== 'health' && typeof check !== 'function') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "ready.check" option must be a function or 'health'. Received ${describe(check)}`)
  }
  if (check === 'health' && !health) throw typeError('ERR_INVALID_ARG_COMBINATION', 'The "ready.check" option \'health\' needs a "health" option')
  if (stdout === undefined && check === undefined) {
    throw typeError('ERR_INVALID_ARG_VALUE', 'The "ready" option needs a "stdout" pattern or a "check"')
  }
  const timeoutMs = validateMs(options.timeoutMs, 'ready.timeoutMs') ?? DEFAULT_READY_TIMEOUT_MS
  if (timeoutMs === 0) throw rangeError('ERR_OUT_OF_RANGE', 'The value of "ready.timeoutMs" is out of range. It must be > 0')
  const attemptMs = validateMs(options.attemptTimeoutMs, 'ready.attemptTimeoutMs')
  if (attemptMs === 0) throw rangeError('ERR_OUT_OF_RANGE', 'The value of "ready.attemptTimeoutMs" is out of range. It must be > 0')
  if (attemptMs !== undefined && check === undefined) {
    throw typeError('ERR_INVALID_ARG_COMBINATION', 'The "ready.attemptTimeoutMs" option bounds each "ready.check": it needs one')
  }
  return {
    stdout: typeof stdout === 'object' ? perLine(stdout) : (stdout ?? null),
    check: check === 'health' ? health!.check : (check ?? null),
    intervalMs: validateMs(options.intervalMs, 'ready.intervalMs') ?? 250,
    attemptTimeoutMs: attemptMs ?? (check === 'health' ? health!.timeoutMs : Math.min(DEFAULT_READY_ATTEMPT_MS, timeoutMs)),
    timeoutMs,
  }
}

/**
 * The pattern as a per-line test: a copy without the g and y flags. With them, test() starts at the
 * pattern's lastIndex, which one match leaves past it: the next incarnation (or another child given
 * the same RegExp) would miss its line and be stopped as not ready. The copy is the spec's own.
 */
function perLine(pattern: RegExp): RegExp {
  return new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, ''))
}

/** stdio that pipes the child's stdout (Node's default does). */
export function pipesStdout(stdio: unknown): boolean {
  const fd1 = Array.isArray(stdio) ? stdio[1] : stdio
  return fd1 === undefined || fd1 === null || fd1 === 'pipe' || fd1 === 'overlapped'
}

export interface ReadyHooks {
  context(): Omit<HealthCheckContext, 'signal'>
  output: OutputSource
  ready(): void
  notReady(error: TimeoutError): void
}

/** The wait of one incarnation: until each condition holds (ready) or the bound (not ready); cancel() ends it. */
export function awaitReady(spec: ReadySpec, hooks: ReadyHooks): { cancel(): void } {
  const done = new AbortController()
  let pending = (spec.stdout !== null ? 1 : 0) + (spec.check !== null ? 1 : 0)
  const met = (): void => {
    if (--pending > 0 || done.signal.aborted) return
    cancel()
    hooks.ready()
  }
  const bound = setTimeout(() => {
    cancel()
    const error = new TimeoutError(`The child was not ready within ${spec.timeoutMs} ms`, spec.timeoutMs)
    Object.assign(error, { code: 'ERR_REAPKIT_NOT_READY' })
    hooks.notReady(error)
  }, spec.timeoutMs)
  let unsubscribe = (): void => {}
  const cancel = (): void => {
    clearTimeout(bound)
    unsubscribe()
    done.abort()
  }
  if (spec.stdout !== null) {
    const pattern = spec.stdout
    const matches = typeof pattern === 'string' ? (l: string) => l.includes(pattern) : (l: string) => pattern.test(l)
    let seen = false
    unsubscribe = hooks.output.subscribe(hooks.context().child, 'stdout', lines((line) => {
      if (seen || !matches(line)) return
      seen = true
      unsubscribe() // the wait reads no more than it needs
      met()
    }))
  }
  if (spec.check !== null) void pollUntilPasses(spec.check, spec, done.signal, hooks).then((passed) => passed && met())
  return { cancel }
}

/**
 * Runs the check, `intervalMs` apart, each attempt bounded by `attemptTimeoutMs`, until one passes
 * (true) or the wait ends (false).
 */
async function pollUntilPasses(check: NonNullable<ReadySpec['check']>, spec: ReadySpec, done: AbortSignal, hooks: ReadyHooks): Promise<boolean> {
  while (!done.aborted) {
    if ((await attempt(check, spec.attemptTimeoutMs, done, hooks)) && !done.aborted) return true
    await new Promise<void>((res) => {
      const timer = setTimeout(res, spec.intervalMs)
      done.addEventListener('abort', () => (clearTimeout(timer), res()), { once: true })
    })
  }
  return false
}

/**
 * One run of the check with its own signal, aborted at `attemptMs` or when the wait ends: true when
 * it passed within that. A check that ignores its signal is not waited for past it (one request
 * never answered must not use up the whole readiness bound).
 */
async function attempt(check: NonNullable<ReadySpec['check']>, attemptMs: number, done: AbortSignal, hooks: ReadyHooks): Promise<boolean> {
  const own = new AbortController()
  const end = (): void => own.abort()
  done.addEventListener('abort', end, { once: true })
  const timer = setTimeout(end, attemptMs)
  const ended = new Promise<false>((res) => own.signal.addEventListener('abort', () => res(false), { once: true }))
  try {
    const run = (async () => check({ ...hooks.context(), signal: own.signal }))()
    return await Promise.race([run.then(() => true, () => false), ended])
  } finally {
    clearTimeout(timer)
    done.removeEventListener('abort', end)
    own.abort() // whatever the check left running ends with its attempt
  }
}
