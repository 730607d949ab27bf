/**
 * The work registry: what is in flight, what was served, drained, refused and abandoned, and the
 * one AbortSignal that tells work it has been abandoned. run() and begin() are the per-request hot
 * path: nothing here allocates per call beyond the done() closure.
 */
import { setMaxListeners } from 'node:events'
// The module's performance, not the global's getter: ~10% off run()'s cost (bench/keepalive.mjs).
import { performance } from 'node:perf_hooks'
import { typeError } from '../../ground/errors'
import type { RunDurations } from './metrics'
import { ShuttingDownError, type KeepaliveState } from './types'

/** Where the shutdown stands: shared by the registry, the triggers and the drain. */
export interface Phase {
  state: KeepaliveState
  /** Why it is shutting down; null while running. */
  reason: string | null
  /** performance.now() at the trigger; 0 while running. */
  triggeredAt: number
  /** The final report's elapsedMs, once closed. */
  finalElapsedMs: number | null
}

export class WorkRegistry {
  inFlight = 0
  served = 0
  drained = 0
  refused = 0
  abandoned = 0
  readonly #phase: Phase
  readonly #durations: RunDurations
  #inFlightAtTrigger = 0
  // One signal for all work: it aborts once, when the drain abandons whatever still runs. (An
  // AbortController per call cost ~3.6 us, thirty times the call itself.)
  #abandon: AbortController | null = null
  #onIdle: (() => void) | null = null
  // Set when the grace runs out: every item still in flight then is abandoned (begin() refuses new
  // ones by then), so whatever ends after this was abandoned and is not served.
  #abandonedAll = false

  constructor(phase: Phase, durations: RunDurations) {
    this.#phase = phase
    this.#durations = durations
  }

  /** Marks one work item started; its done() is called once when it ends. */
  begin(): (served?: boolean) => void {
    if (this.#phase.state !== 'running') {
      this.refused++
      throw new ShuttingDownError(this.#phase.reason ?? 'shutdown')
    }
    this.inFlight++
    const startedAt = performance.now()
    let ended = false
    return (counted = true) => {
      if (ended) return
      ended = true
      this.#end(counted !== false, startedAt)
    }
  }

  #end(counted: boolean, startedAt: number): void {
    this.inFlight--
    // Abandoned work that finishes during the hooks was already counted as abandoned.
    if (this.#abandonedAll) return
    if (counted) {
      this.served++
      this.#durations.observe(performance.now() - startedAt)
    }
    // Finished within the grace.
    if (counted && this.#phase.state === 'draining') this.drained = Math.min(this.#inFlightAtTrigger, this.drained + 1)
    if (this.inFlight === 0) this.#onIdle?.()
  }

  /** Runs `fn` as one work item, handing it the abandon signal. */
  run<T>(fn: (signal: AbortSignal) => T | Promise<T>): Promise<T> {
    if (typeof fn !== 'function') return Promise.reject(typeError('ERR_INVALID_ARG_TYPE', 'run() takes a function'))
    let done: () => void
    try {
      done = this.begin()
    } catch (err) {
      return Promise.reject(err)
    }
    let result: Promise<T>
    try {
      result = Promise.resolve(fn(this.abandonSignal))
    } catch (err) {
      result = Promise.reject(err)
    }
    return result.finally(done)
  }

  get abandonSignal(): AbortSignal {
    if (!this.#abandon) {
      this.#abandon = new AbortController()
      // Every call may add a listener to this one signal: many at once are expected, not a leak.
      setMaxListeners(0, this.#abandon.signal)
    }
    return this.#abandon.signal
  }

  /** The drain has begun: what is in flight now is what it may drain. */
  markTrigger(): void {
    this.#inFlightAtTrigger = this.inFlight
  }

  /**
   * Waits for the work in flight (some), at most `graceMs`. A ref'd timer keeps the process alive for the
   * whole grace, even if the work in flight waits on nothing that would.
   */
  async settle(graceMs: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, graceMs)
      this.#onIdle = () => {
        clearTimeout(timer)
        resolve()
      }
    })
    this.#onIdle = null
  }

  /** The grace is over: what still runs is abandoned, and told so through its signal. */
  abandonRest(reason: string): void {
    this.abandoned = this.inFlight
    this.#abandonedAll = true
    if (this.abandoned > 0) this.#abandon?.abort(new ShuttingDownError(reason))
  }
}
