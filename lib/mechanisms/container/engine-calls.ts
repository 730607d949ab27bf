/**
 * The engine calls of one container unit's stop (unit.ts): each bounded by its own timeout and by
 * the stop's deadline, kept in flight until it settles, and all cut short at the stop's end with
 * the timers waiting beside them (one AbortSignal). The unit decides what a call left unanswered
 * means; this only keeps the calls.
 */
import { type CallOptions, ENGINE_CALL_MS_DEFAULT } from './engine'

/** An engine call in flight: what it is (for the error when it goes unanswered) and since when. */
export interface Call {
  what: string
  since: number
  promise: Promise<unknown>
}

const now = (): number => performance.now()

export class EngineCalls {
  readonly #calls = new Set<Call>()
  readonly #abort = new AbortController()

  /** `deadline`: when every call must have ended (it moves as the stop's phases go). */
  constructor(
    private readonly deadline: () => number,
    private readonly callTimeoutMs: number = ENGINE_CALL_MS_DEFAULT,
  ) {}

  /** A call's bound: its own (plus `waitMs` it waits on a container), within the stop's deadline. */
  options(waitMs = 0): CallOptions {
    const own = waitMs + this.callTimeoutMs
    return { timeoutMs: Math.max(1, Math.min(own, this.deadline() - now())), signal: this.#abort.signal }
  }

  /** Runs a call, kept in flight until it settles. */
  track<T>(what: string, run: (call: CallOptions) => Promise<T>, waitMs = 0): Promise<T> {
    const promise = run(this.options(waitMs))
    const call: Call = { what, since: now(), promise }
    this.#calls.add(call)
    const settled = (): void => void this.#calls.delete(call)
    void promise.then(settled, settled)
    return promise
  }

  /** The calls in flight. */
  inFlight(): Call[] {
    return [...this.#calls]
  }

  /** The engine's stop and kill calls in flight. */
  acting(): Array<Promise<unknown>> {
    return this.inFlight()
      .filter((c) => c.what === 'stop' || c.what === 'kill')
      .map((c) => c.promise)
  }

  /** Cuts short every call and timer (the stop's end). */
  abort(): void {
    this.#abort.abort()
  }

  /** A timer that the abort cuts short. */
  sleep(ms: number): Promise<void> {
    const signal = this.#abort.signal
    if (ms <= 0 || signal.aborted) return Promise.resolve()
    return new Promise((res) => {
      const done = (): void => {
        clearTimeout(timer)
        signal.removeEventListener('abort', done)
        res()
      }
      const timer = setTimeout(done, ms)
      signal.addEventListener('abort', done, { once: true })
    })
  }
}
