/**
 * The Supervisor's registry: its entries and the indexes over them (by pid, request id, child),
 * and the history limit on finished ones. No signals here: only bookkeeping.
 */
import type { ChildProcess } from 'node:child_process'
import { ReapkitError, rangeError, typeError } from '../../ground/errors'
import type { ProcessHandle } from '../../mechanisms/handle'
import type { KillResult } from '../../mechanisms/kill'
import { spawnedInfo } from '../../mechanisms/spawn'
import type { SpawnOptions } from '../../mechanisms/spawn'
import type { Restarter } from './restart'
import type { HealthMonitor, HealthSpec } from './health'
import type { ProcessRecord } from './record'
import type { ReadySpec } from './readiness'

export interface Entry {
  id: number
  record: ProcessRecord
  child: ChildProcess
  /** Pinned while the process runs (spawn's handle, or one opened at adopt time). */
  handle: ProcessHandle | null
  /**
   * How many terminate()/shutdownAll() calls are stopping it now: while any is, they, not the exit
   * event, settle its status. A count, so that one call ending does not clear another's claim.
   */
  stopping: number
  /**
   * With a restart policy: its state, the options each incarnation is spawned with, and while it
   * is 'restarting', the stop of what the last incarnation left in its group.
   */
  restart: { restarter: Restarter; options: SpawnOptions; leftovers?: Leftovers | undefined } | null
  /** With a health check: its options and the running incarnation's monitor. */
  health: { spec: HealthSpec; monitor: HealthMonitor | null } | null
  /** With a readiness condition (spawn's `ready`): it, and the running incarnation's wait. */
  ready: { spec: ReadySpec; wait: { cancel(): void } | null } | null
  /** The children it starts after (spawn's `after`): shutdownAll() stops it before them. */
  after: Entry[]
}

/** The stop of what an exited incarnation left in its group, and when it began (performance.now()). */
export interface Leftovers {
  stop: Promise<KillResult | undefined>
  startedAt: number
}

/** What a new entry brings beside its record: its restart policy, health check, readiness and order. */
export type Plan = Pick<Entry, 'restart' | 'health' | 'ready' | 'after'>
export const NO_PLAN: Plan = { restart: null, health: null, ready: null, after: [] }

/** An incarnation is up: ready ('running') or not yet ('starting'). */
export const running = (e: Entry): boolean => e.record.status === 'running' || e.record.status === 'starting'
/** Up, or between two incarnations: not over yet. */
export const live = (e: Entry): boolean => running(e) || e.record.status === 'restarting'
/** libuv has reaped the leader: its end is known, not assumed. */
export const exited = (e: Entry): boolean => e.child.exitCode !== null || e.child.signalCode !== null

export class Registry {
  readonly entries = new Map<number, Entry>()
  readonly #byPid = new Map<number, Entry>()
  readonly #byRequest = new Map<string | number, Entry>()
  /**
   * Every incarnation's ChildProcess (spawn() returned the first; one whose start failed has no pid
   * to name it by): weak, so a dropped entry's children go with it; checked against `entries`.
   */
  readonly #byChild = new WeakMap<ChildProcess, Entry>()
  /** Entries whose status is final, in the order they settled (what #prune drops from). */
  readonly #finished = new Set<Entry>()
  readonly #history: number
  #nextId = 1

  constructor(history: number) {
    this.#history = history
  }

  /** A new entry, indexed; `finished` when its process had already exited. */
  add(record: ProcessRecord, child: ChildProcess, handle: ProcessHandle | null, plan: Plan = NO_PLAN): Entry {
    const entry: Entry = { id: this.#nextId++, record, child, handle, stopping: 0, ...plan }
    this.entries.set(entry.id, entry)
    if (!Number.isNaN(record.pid)) this.#byPid.set(record.pid, entry) // NaN: it never ran
    this.#byChild.set(child, entry)
    if (record.requestId !== null) this.#byRequest.set(record.requestId, entry)
    if (!live(entry)) this.#finished.add(entry)
    return entry
  }

  /** A restarted entry's new incarnation: indexed by its pid (the last one's no longer) and its child. */
  reindex(entry: Entry, child: ChildProcess, handle: ProcessHandle | null): void {
    if (this.#byPid.get(entry.record.pid) === entry) this.#byPid.delete(entry.record.pid)
    entry.child = child
    entry.handle = handle
    this.#byPid.set(child.pid!, entry)
    this.#byChild.set(child, entry)
  }

  /** The entry of a ChildProcess, any of its incarnations', while the entry is kept. */
  byChild(child: ChildProcess): Entry | undefined {
    const entry = this.#byChild.get(child)
    return entry && this.entries.get(entry.id) === entry ? entry : undefined
  }

  /**
   * A number is first the pid of a running process, then a request id, then the pid of a finished
   * one (JSON-RPC ids are small integers; so are pids in a container).
   */
  find(pidOrRequestId: number | string): Entry | undefined {
    const byPid = typeof pidOrRequestId === 'number' ? this.#byPid.get(pidOrRequestId) : undefined
    if (byPid && running(byPid)) return byPid
    return this.#byRequest.get(pidOrRequestId) ?? byPid
  }

  checkRequestId(requestId: string | number): void {
    if (typeof requestId !== 'string' && typeof requestId !== 'number') {
      throw typeError('ERR_INVALID_ARG_TYPE', 'The "requestId" option must be a string or a number')
    }
    // JSON writes NaN and Infinity as null: a label, a control-socket client or a state file could never name it back.
    if (typeof requestId === 'number' && !Number.isFinite(requestId)) {
      throw rangeError('ERR_OUT_OF_RANGE', `The value of "requestId" is out of range. It must be a finite number. Received ${requestId}`)
    }
    const holder = this.#byRequest.get(requestId)
    if (holder && live(holder)) {
      throw new ReapkitError('ERR_REAPKIT_DUPLICATE_REQUEST', `Request id ${JSON.stringify(requestId)} already has a running process`)
    }
  }

  /** Marks an entry's status final (once), then drops what the history limit no longer keeps. */
  finish(entry: Entry): void {
    this.#finished.add(entry)
    this.prune()
  }

  /**
   * Drops the oldest finished records beyond the history limit. O(1) amortized per status change:
   * it looks only at `#finished` (settled entries, oldest first) and only while there are more of
   * them than the limit, never at the running ones.
   */
  prune(): void {
    if (this.#finished.size <= this.#history) return
    // Finished and provably over: its leader reaped and its group (if any) gone. One that is not
    // over yet (its group still has members) stays, and is looked at again on a later change.
    const over = (e: Entry): boolean => {
      if (e.child.exitCode === null && e.child.signalCode === null) return false
      const info = spawnedInfo(e.child)
      return !info || info.pgid === null || info.groupGone
    }
    let excess = this.#finished.size - this.#history
    for (const e of this.#finished) {
      if (excess <= 0) break
      if (!over(e)) continue
      this.#finished.delete(e)
      this.entries.delete(e.id)
      if (this.#byPid.get(e.record.pid) === e) this.#byPid.delete(e.record.pid)
      if (e.record.requestId !== null && this.#byRequest.get(e.record.requestId) === e) this.#byRequest.delete(e.record.requestId)
      this.#byChild.delete(e.child)
      excess--
    }
  }
}
