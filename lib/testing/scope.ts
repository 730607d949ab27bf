/**
 * What a capture (captureProcesses, lib/testing.ts) counts as its own: the processes that descend
 * from this one through processes started after the capture began, the members of the process
 * groups those made (wherever they were re-parented), and the members of the cgroups this process
 * made during the capture (spawn({ cgroup: true })). Everything that existed when it began is left
 * alone. Stateless about the process table: each look is given one.
 */
import { ChildProcess } from 'node:child_process'
import { capabilities, reapAdopted } from '../index'
import { descendantsOf, type ProcessRow, readProcessTable } from '../mechanisms/proctable'
import { type FoundCgroup, listOwnCgroups, membersOf } from '../mechanisms/cgroup/list'
import type { CapturedProcess } from './types'

const key = (row: { pid: number; start: string }): string => `${row.pid}:${row.start}`
export const live = (r: ProcessRow): boolean => r.state !== 'Z' && r.state !== 'X'
const cgroupKey = (c: FoundCgroup): string => `${c.path}:${c.id}`
export const toCaptured = (r: ProcessRow): CapturedProcess => ({ pid: r.pid, ppid: r.ppid, pgid: r.pgid, ageMs: r.ageMs, command: r.command })

/** Where spawn({ cgroup: true }) makes this process's cgroups (our own cgroup), or null where it makes none. */
function cgroupParent(): string | null {
  const where = capabilities().cgroup
  return where.available && where.path ? where.path : null
}

/** The pids in a cgroup now ([] once it is gone, or unreadable for a moment: the next look sees them). */
function membersNow(path: string): number[] {
  try {
    return membersOf(path)
  } catch {
    return []
  }
}

// The children libuv spawned (child_process in this thread): it waits for each by pid itself, so
// the capture must never reap one of them. Recorded from the first capture on; a child spawned
// earlier is in that capture's baseline, which is never reaped either.
const libuvChildren = new Set<number>()
let spawnPatched = false
function recordLibuvChildren(): void {
  if (spawnPatched) return
  spawnPatched = true
  const proto = ChildProcess.prototype as unknown as { spawn: (...args: unknown[]) => unknown }
  const original = proto.spawn
  proto.spawn = function patchedSpawn(this: ChildProcess, ...args: unknown[]) {
    const result = original.apply(this, args)
    const pid = this.pid
    if (pid !== undefined) {
      libuvChildren.add(pid)
      this.once('exit', () => libuvChildren.delete(pid))
    }
    return result
  }
}

export class CaptureScope {
  readonly #self = process.pid
  readonly #baseline = new Set<string>()
  /** Our cgroups that exist already (a server of beforeAll's): their members are not this capture's. */
  readonly #cgroupsAt = cgroupParent()
  readonly #cgroupBaseline: Set<string>
  /** Process groups that new processes created (leader pid -> its start): never one that existed before. */
  readonly #groups = new Map<number, string>()
  /** Which cgroup a survivor was found in (the last look's). */
  readonly #inCgroup = new Map<number, string>()

  /** `reaps`: the capture is a subreaper, and reaps the zombies it adopted. */
  constructor(private readonly reaps: boolean) {
    recordLibuvChildren()
    for (const row of readProcessTable()) this.#baseline.add(key(row))
    this.#cgroupBaseline = new Set(this.#cgroupsAt === null ? [] : listOwnCgroups(this.#cgroupsAt).map(cgroupKey))
  }

  /** The cgroups this process made since the capture began. */
  newCgroups(): FoundCgroup[] {
    return this.#cgroupsAt === null ? [] : listOwnCgroups(this.#cgroupsAt).filter((c) => !this.#cgroupBaseline.has(cgroupKey(c)))
  }

  /** The cgroup a process was last found in, if it was found through one. */
  cgroupOf(pid: number): string | undefined {
    return this.#inCgroup.get(pid)
  }

  /** A found process as the capture reports it. */
  captured(r: ProcessRow): CapturedProcess {
    const cg = this.#inCgroup.get(r.pid)
    return cg === undefined ? toCaptured(r) : { ...toCaptured(r), cgroup: cg }
  }

  /** The capture's live processes now (the zombies it adopted reaped first). */
  survivorsNow(): ProcessRow[] {
    const table = readProcessTable()
    this.reapOrphans(table)
    return this.#fresh(table).filter(live)
  }

  /** Reaps the zombies adopted as subreaper: our children that libuv did not spawn and that came later. */
  reapOrphans(table: ProcessRow[] = readProcessTable()): void {
    if (!this.reaps) return
    for (const row of table) {
      if (row.ppid !== this.#self || row.state !== 'Z' || libuvChildren.has(row.pid) || this.#baseline.has(key(row))) continue
      try {
        reapAdopted(row.pid)
      } catch {
        // ECHILD: someone else reaped it meanwhile
      }
    }
  }

  /** Every process of the capture in `table`: descendants, their groups' members, our new cgroups' members. */
  #fresh(table: ProcessRow[]): ProcessRow[] {
    const byPid = new Map(table.map((r) => [r.pid, r]))
    const found = new Map<number, ProcessRow>()
    this.#descendants(table, found)
    this.#groupMembers(table, byPid, found)
    this.#cgroupMembers(byPid, found)
    return [...found.values()]
  }

  /**
   * Down from this process through new processes only: the children of a process that existed
   * before the capture (a server started in beforeAll) are that process's business, not the test's.
   */
  #descendants(table: ProcessRow[], found: Map<number, ProcessRow>): void {
    for (const row of descendantsOf(this.#self, table, (r) => !this.#baseline.has(key(r)))) {
      found.set(row.pid, row)
      if (row.pgid === row.pid && !this.#groups.has(row.pid)) this.#groups.set(row.pid, key(row))
    }
  }

  /** The members of the groups new processes made, wherever they were re-parented. */
  #groupMembers(table: ProcessRow[], byPid: Map<number, ProcessRow>, found: Map<number, ProcessRow>): void {
    for (const [pgid, leader] of this.#groups) {
      // A group id is a pid: once its group is empty it can come back as an unrelated group.
      const now = byPid.get(pgid)
      if (now && key(now) !== leader) this.#groups.delete(pgid)
    }
    for (const row of table) {
      if (row.pid !== this.#self && this.#groups.has(row.pgid) && !this.#baseline.has(key(row)) && !found.has(row.pid)) found.set(row.pid, row)
    }
  }

  /** The members of our new cgroups: a daemon that double-forked away with no subreaper to catch it is still in its cgroup. */
  #cgroupMembers(byPid: Map<number, ProcessRow>, found: Map<number, ProcessRow>): void {
    for (const cg of this.newCgroups()) {
      for (const pid of membersNow(cg.path)) {
        const row = byPid.get(pid)
        if (row && row.pid !== this.#self && !this.#baseline.has(key(row))) {
          found.set(pid, row)
          this.#inCgroup.set(pid, cg.path)
        }
      }
    }
  }
}
