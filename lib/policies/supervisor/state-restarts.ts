/**
 * The restart times a state file carries from one supervisor to the next (by request id), so that
 * a host that crash-loops with its child cannot restart it without limit. Each id's times come with
 * its window: what left the window is forgotten when the file is written, and an id with none left
 * is dropped, so the file does not grow with every generation or every restart.
 */

import { withinWindow } from './restart'

/** At most this many restart times per request id are kept in the file (more than any intensity limit in use). */
export const MAX_RESTART_TIMES = 1000

interface Times {
  /** ms since the epoch, oldest first. */
  at: number[]
  /** The window they count in; null from a file written before it was recorded (kept as read). */
  windowMs: number | null
}

/** The times within the window at `now` (withinWindow). */
function inWindow(times: Times, now: number): number[] {
  return times.at.filter((t) => withinWindow(t, now, times.windowMs)).slice(-MAX_RESTART_TIMES)
}

export class RestartTimes {
  readonly #byId = new Map<string | number, Times>()
  /** Ids read from the file and not yet handed to a spawn(): each seeds one child, once. */
  readonly #unclaimed = new Set<string | number>()

  /** From the file's `restarts` (anything malformed is skipped). */
  static read(value: unknown, now = Date.now()): RestartTimes {
    const times = new RestartTimes()
    if (!Array.isArray(value)) return times
    for (const item of value as Array<{ requestId?: unknown; at?: unknown; windowMs?: unknown }>) {
      const id = item?.requestId
      if ((typeof id !== 'string' && typeof id !== 'number') || !Array.isArray(item.at)) continue
      const windowMs = typeof item.windowMs === 'number' && Number.isFinite(item.windowMs) && item.windowMs >= 0 ? item.windowMs : null
      const at = inWindow({ at: (item.at as unknown[]).filter((t): t is number => Number.isFinite(t)), windowMs }, now)
      if (at.length === 0) continue
      times.#byId.set(id, { at, windowMs })
      times.#unclaimed.add(id)
    }
    return times
  }

  /**
   * What the previous supervisor left for this id, for the first spawn() of it only: a later
   * spawn() of the same id in this supervisor starts a window of its own.
   */
  claim(requestId: string | number | null, now = Date.now()): number[] {
    if (requestId === null || !this.#unclaimed.delete(requestId)) return []
    const times = this.#byId.get(requestId)
    return times ? inWindow(times, now) : []
  }

  /** A child's restarts within its window now. */
  note(requestId: string | number, at: number[], windowMs: number): void {
    this.#unclaimed.delete(requestId)
    this.#byId.set(requestId, { at, windowMs }) // the caller's own copy (Restarter.recent())
  }

  /** What the file gets: the times still in their window; ids with none are forgotten. */
  toJSON(now = Date.now()): Array<{ requestId: string | number; at: number[]; windowMs?: number }> {
    const out: Array<{ requestId: string | number; at: number[]; windowMs?: number }> = []
    for (const [requestId, times] of this.#byId) {
      times.at = inWindow(times, now)
      if (times.at.length === 0) {
        this.#byId.delete(requestId)
        this.#unclaimed.delete(requestId)
        continue
      }
      out.push(times.windowMs === null ? { requestId, at: times.at } : { requestId, at: times.at, windowMs: times.windowMs })
    }
    return out
  }
}
