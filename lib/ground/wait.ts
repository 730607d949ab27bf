/**
 * Bounded waits shared by the stop paths: every wait in reapkit has a bound, and neither its timer
 * nor its listener outlives it.
 */
import type { ChildProcess } from 'node:child_process'
import { type EventEmitter, on } from 'node:events'

/** Waits at most `ms` for `promise` to settle (either way); true if it did. The timer is cleared. */
export function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((res) => (timer = setTimeout(res, Math.max(0, ms), false))),
  ]).finally(() => clearTimeout(timer))
}

/**
 * As settlesWithin, and cut short by `abort`: true when `promise` settled within `ms`, false at
 * the deadline or as soon as `abort` fires. Neither the timer nor the abort listener outlives it.
 */
export async function settlesWithinUnlessAborted(promise: Promise<unknown>, ms: number, abort: AbortSignal | undefined): Promise<boolean> {
  if (!abort) return settlesWithin(promise, ms)
  if (abort.aborted) return settlesWithin(promise, 0)
  let onAbort!: () => void
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      new Promise<boolean>((res) => {
        timer = setTimeout(res, Math.max(0, ms), false)
        abort.addEventListener('abort', (onAbort = () => res(false)), { once: true })
      }),
    ])
  } finally {
    clearTimeout(timer)
    abort.removeEventListener('abort', onAbort)
  }
}

/** The child's exit (libuv has reaped it) as a promise, and a way to drop the listener early. */
export function childExit(child: ChildProcess): { promise: Promise<void>; dispose(): void } {
  if (child.exitCode !== null || child.signalCode !== null) return { promise: Promise.resolve(), dispose() {} }
  let listener!: () => void
  const promise = new Promise<void>((resolve) => {
    listener = () => resolve()
    child.once('exit', listener)
  })
  return { promise, dispose: () => child.off('exit', listener) }
}

/**
 * The first argument of each `event` of `emitter`, as an async iterator that ends as soon as any
 * of `ends` aborts (events already queued are delivered first). No listener outlives it.
 */
export async function* eventsUntil<T>(emitter: EventEmitter, event: string, ends: ReadonlyArray<AbortSignal | undefined>): AsyncGenerator<T> {
  const signals = ends.filter((s): s is AbortSignal => s !== undefined)
  if (signals.some((s) => s.aborted)) return
  // One signal for all of them (AbortSignal.any is newer than Node 20.0).
  const stop = new AbortController()
  const abort = (): void => stop.abort()
  for (const s of signals) s.addEventListener('abort', abort, { once: true })
  try {
    for await (const [value] of on(emitter, event, { signal: stop.signal })) yield value as T
  } catch (err) {
    if ((err as { name?: string }).name !== 'AbortError') throw err
  } finally {
    for (const s of signals) s.removeEventListener('abort', abort)
  }
}
