/**
 * Start order (spawn's `after`): a child names the children it starts after, by request id (or
 * pid); start() waits for each to be ready first, within a bound, and shutdownAll() stops it before
 * them (shutdown.ts). Dependencies are registered before what depends on them, so there is no cycle.
 */
import type { EventEmitter } from 'node:events'
import { ReapkitError, TimeoutError, typeError } from '../../ground/errors'
import { describe } from '../../ground/validate'
import { type Entry, live, type Registry } from './registry'

/** The entries `after` names, each registered and not over; else a clear error before anything starts. */
export function resolveAfter(registry: Registry, after: unknown): Entry[] {
  if (after === undefined) return []
  if (!Array.isArray(after)) throw typeError('ERR_INVALID_ARG_TYPE', `The "after" option must be an array of request ids. Received ${describe(after)}`)
  return after.map((id: unknown) => {
    if (typeof id !== 'string' && typeof id !== 'number') {
      throw typeError('ERR_INVALID_ARG_TYPE', `The "after" option must be an array of request ids. Received ${describe(id)} in it`)
    }
    const entry = registry.find(id)
    if (!entry || !live(entry)) {
      throw new ReapkitError('ERR_REAPKIT_NOT_SUPERVISED', `"after" names ${JSON.stringify(id)}, which this supervisor does not run`)
    }
    return entry
  })
}

const nameOf = (entry: Entry): string => JSON.stringify(entry.record.requestId ?? entry.record.pid)

/**
 * Resolves once the entry is ready ('running'); rejects when it is over, when (`own`) its first
 * incarnation failed, or at `waitMs` (ERR_REAPKIT_NOT_READY). Follows the supervisor's 'status'
 * events: no polling; the listener and the timer end with the wait.
 */
export function untilReady(events: EventEmitter, entry: Entry, waitMs: number, own: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined
    const end = (settle: () => void): void => {
      clearTimeout(timer)
      events.off('status', check)
      settle()
    }
    const failed = (): Error => {
      const { status, error } = entry.record
      const why = error ? `: ${error.message}` : ''
      const code = own ? (error?.code ?? 'ERR_REAPKIT_NOT_READY') : 'ERR_REAPKIT_DEPENDENCY_FAILED'
      return new ReapkitError(code, `${own ? 'The child' : `Its dependency ${nameOf(entry)}`} did not become ready (${status})${why}`)
    }
    function check(): void {
      const { status } = entry.record
      if (status === 'running') end(resolve)
      else if (!live(entry) || (own && status === 'restarting')) end(() => reject(failed()))
    }
    events.on('status', check)
    timer = setTimeout(() => end(() => {
      const error = new TimeoutError(`${own ? 'The child' : `Its dependency ${nameOf(entry)}`} was not ready within ${waitMs} ms`, waitMs)
      reject(Object.assign(error, { code: 'ERR_REAPKIT_NOT_READY' }))
    }), waitMs)
    check()
  })
}

/** For each target, the targets started after it (`after` names it): O(targets + edges). */
export function dependentsOf(targets: readonly Entry[]): Map<Entry, Entry[]> {
  const dependents = new Map<Entry, Entry[]>(targets.map((t) => [t, []]))
  for (const t of targets) for (const dep of t.after) dependents.get(dep)?.push(t)
  return dependents
}

/** How many stops one after the other shutdownAll() needs for `targets` (the longest chain of `after`). */
export function layers(targets: readonly Entry[]): number {
  const dependents = dependentsOf(targets)
  const depth = new Map<Entry, number>()
  // Newest first: a dependent is newer than what it depends on, so its depth is known when they are reached.
  for (const entry of [...targets].reverse()) {
    depth.set(entry, 1 + Math.max(0, ...dependents.get(entry)!.map((t) => depth.get(t)!)))
  }
  return Math.max(1, ...depth.values())
}
