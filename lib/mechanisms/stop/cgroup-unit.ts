/**
 * The child's own cgroup as a unit of a stop (Linux, cgroup v2; spawn({ cgroup: true }) made it):
 * everything the child started, escapees included: a helper that called setsid, a daemon that
 * double-forked. A member leaves it only by a move, which needs write access to `cgroup.procs`
 * above it: root's, or under a subtree delegated to a user, any process of that user (a plain
 * same-uid child can write its pid to the delegated parent's `cgroup.procs`).
 *
 *   members  `cgroup.procs` of it and of every cgroup a member made inside it (a nested reapkit
 *            with { cgroup: true }), each pinned by pidfd and then seen listed again (so the pin is a
 *            member, never a stranger that took a freed pid), signalled through that pin;
 *   graceful the phase's signal to each member, once (one that another unit or stop under way
 *            has given it is not given it twice: signal-ledger.ts);
 *            A child in a PID namespace of its own (spawn({ pidNamespace, cgroup })): only the members
 *            in our namespace (its helper), whose init passes the signal on to every process in its
 *            namespace; signalled here too, each would get it twice;
 *   forced   `cgroup.kill` (5.14+): the kernel's SIGKILL to every member at once, one forked
 *            meanwhile included. A kill signal other than SIGKILL goes to each member instead;
 *   gone     `cgroup.events` says `populated 0`: the kernel's "no live member", observed as an
 *            inotify event on that file (fs.watch), never a poll; each pinned member's exit also
 *            ends a wait, so members forked meanwhile are found and signalled at the next sweep;
 *   after    the cgroup is removed (rmdir) once empty, at the close, the cgroups inside it first.
 *
 * It goes beside the target's own unit (the process group), under the same deadline: the group
 * unit still ends a member that left the cgroup but not its group; one that left both (under a
 * delegated subtree, a same-uid process can do both) is seen by neither.
 */
import { type FSWatcher, watch } from 'node:fs'
import { join } from 'node:path'
import { signalName } from '../../ground/validate'
import { openProcess, type ProcessHandle } from '../handle'
import { pidNamespaceDepth } from '../pid-namespace'
import { cgroupPopulated, cgroupProcs, cgroupState, hold, isCgroupRemoved, killCgroup, letGo, removeCgroup, removeWhenEmpty } from '../cgroup/make'
import type { StopJournal } from './journal'
import { isGoneError } from './pin'
import { SignalLedger } from './signal-ledger'
import type { StopUnit } from './unit'

/** What a stop did with the child's cgroup (KillResult.cgroup). */
export interface CgroupOutcome {
  /** The cgroup's directory. */
  path: string
  /** How many processes were members of it during the stop (every one it listed). */
  members: number
  /** True when the forced phase ran (`cgroup.kill`, or the kill signal to each member). */
  escalated: boolean
  /** True when the kernel said `populated 0`: no live member remains. */
  gone: boolean
  /** True when the cgroup was removed after. */
  removed: boolean
}

interface Member {
  handle: ProcessHandle
  exited: Promise<unknown>
  gone: boolean
}

const SIGKILL = 9

export class CgroupUnit implements StopUnit {
  readonly fields: Readonly<{ pid: number; cgroup: string }>
  private readonly ledger = new SignalLedger()
  /** By pid: the member now under that pid (one that exited gives way to a new one that took its pid). */
  private readonly members = new Map<number, Member>()
  /** How many members it has pinned in all (KillResult.cgroup.members). */
  private pinned = 0
  private sig = 0
  private force = false
  private sentTo = new Set<ProcessHandle>()
  private killed = false
  private escalated = false
  private gone = false
  private removed = false
  /** Resolves when the kernel says `populated 0` (or the watch ends); made on the first sweep. */
  private empty: Promise<void> | null = null
  private watcher: FSWatcher | null = null
  /** How the unit learned it was gone: 'event' (inotify), or 'read' (it was already empty when it looked). */
  seenBy: 'event' | 'read' | null = null
  /** How many inotify events cgroup.events gave during the stop (the kernel's changes of `populated`). */
  events = 0

  /** Our own depth of PID namespaces, when members deeper than us are left to the helper's forwarding. */
  private readonly ownDepth: number | null

  constructor(private readonly path: string, pid: number, private readonly journal: StopJournal, options: { forwardsIntoPidNamespace?: boolean } = {}) {
    this.fields = { pid, cgroup: path }
    this.ownDepth = options.forwardsIntoPidNamespace ? pidNamespaceDepth('self') : null
    // Removed already (it emptied, or is no longer the one spawn() made): gone, and never touched again.
    if (isCgroupRemoved(path)) {
      this.gone = this.removed = true
      this.seenBy = 'read'
      return
    }
    hold(path) // this stop removes it at its close, not the child's exit meanwhile (spawn.ts)
  }

  phase(sig: number, force: boolean): void {
    this.sig = sig
    this.force = force
    this.sentTo = new Set()
    this.killed = false
    if (force) this.escalated = true
  }

  async sweep(): Promise<Array<Promise<unknown>>> {
    if (this.isEmpty('read')) return []
    this.watchEvents()
    this.refresh()
    if (this.force && this.sig === SIGKILL) this.killAll()
    else this.signalEach()
    if (this.isEmpty('read')) return []
    // The kernel's word, or the exit of every member known (then look again: one forked meanwhile).
    const live = [...this.members.values()].filter((m) => !m.gone)
    const waits: Array<Promise<unknown>> = [this.empty!]
    if (live.length > 0) waits.push(Promise.all(live.map((m) => m.exited)))
    return [Promise.race(waits)]
  }

  survivors(): number[] {
    try {
      return cgroupProcs(this.path)
    } catch {
      return [...this.members.entries()].filter(([, m]) => !m.gone).map(([pid]) => pid)
    }
  }

  /** The outcome so far (final after the close). */
  outcome(): CgroupOutcome {
    return { path: this.path, members: this.pinned, escalated: this.escalated, gone: this.gone, removed: this.removed }
  }

  close(): void {
    this.watcher?.close()
    this.watcher = null
    this.ledger.close()
    for (const m of this.members.values()) m.handle.close()
    if (this.removed || !letGo(this.path)) return // another stop of it is under way: its close removes it
    // Removed once empty: now, or (a survivor left in it) when the kernel says so, if we still run.
    if (!cgroupPopulated(this.path)) this.removed = removeCgroup(this.path)
    else removeWhenEmpty(this.path)
  }

  /** Whether the cgroup holds no live process now; marks the unit gone when so. */
  private isEmpty(by: 'event' | 'read'): boolean {
    if (this.gone) return true
    const state = cgroupState(this.path)
    if (state instanceof Error) this.journal.degraded(state, 'cgroup') // unknown: not empty, and the stop says so
    if (state === 'populated' || state instanceof Error) return false
    this.gone = true
    this.seenBy ??= by
    return true
  }

  /** One inotify watch on cgroup.events for the whole stop: `populated` changes are its events. */
  private watchEvents(): void {
    if (this.empty) return
    this.empty = new Promise<void>((resolve) => {
      const events = join(this.path, 'cgroup.events')
      try {
        // Not persistent: the stop's own bounded wait keeps the loop alive while it needs the answer.
        this.watcher = watch(events, { persistent: false }, () => {
          this.events++
          if (this.isEmpty('event')) resolve()
        })
        this.watcher.on('error', () => resolve()) // removed under us: the next sweep reads it
      } catch (err) {
        // No watch (out of inotify instances): the exits of the pinned members still end the wait.
        this.journal.degraded(err, 'cgroup')
      }
    })
  }

  /** Pins each listed pid not known yet, and keeps only those still listed once pinned. */
  private refresh(): void {
    let listed: number[]
    try {
      listed = cgroupProcs(this.path)
    } catch (err) {
      this.journal.degraded(err, 'cgroup')
      return
    }
    const fresh = new Map<number, ProcessHandle>()
    for (const pid of listed) {
      // A pid known and still alive is that member; a known pid whose member has exited is listed
      // again only because a new member took it (a freed pid): pinned like any new one.
      if (this.members.get(pid)?.gone === false) continue
      try {
        fresh.set(pid, openProcess(pid))
      } catch (err) {
        if (!isGoneError(err)) this.journal.degraded(err, 'cgroup') // a member we could not pin: the kill still reaches it
      }
    }
    if (fresh.size === 0) return
    // Pinned now: a pid still listed names the member itself (a freed pid taken by a process
    // outside would not be listed here: nothing leaves this cgroup, nor can it be entered by us).
    const still = new Set(cgroupProcs(this.path))
    for (const [pid, handle] of fresh) {
      if (!still.has(pid)) {
        handle.close()
        continue
      }
      const member: Member = { handle, exited: Promise.resolve(), gone: false }
      const gone = (): void => void (member.gone = true)
      // An exit that cannot be watched is not an exit: the cgroup's own event still says gone.
      member.exited = handle.exited.then(gone, (err: unknown) => {
        if (!handle.closed) this.journal.degraded(err, 'cgroup')
        return this.empty
      })
      const old = this.members.get(pid)
      if (old) old.handle.close() // exited (its exit has been seen): its pin has nothing left to say
      this.members.set(pid, member)
      this.pinned++
    }
  }

  /** The phase's signal to each live member, once, through its pin. */
  private signalEach(): void {
    let count = 0
    for (const m of this.members.values()) {
      if (m.gone || this.sentTo.has(m.handle)) continue
      this.sentTo.add(m.handle)
      if (this.forwarded(m.handle.pid)) continue
      if (this.ledger.sentElsewhere(this.sig, m.handle.pid)) continue
      try {
        m.handle.signal(this.sig)
        this.ledger.record(this.sig, m.handle)
        count++
      } catch (err) {
        if (!isGoneError(err)) this.journal.degraded(err, 'cgroup')
      }
    }
    if (count > 0) this.journal.sent(this.fields, { signal: signalName(this.sig)!, atMs: this.journal.elapsed(), processes: count, cgroup: true })
  }

  /** Whether the helper's init passes this phase's signal on to the member (in the child's PID
   * namespace, deeper than us): not SIGKILL, which the init cannot pass on once the helper is dead. */
  private forwarded(pid: number): boolean {
    if (this.ownDepth === null || this.sig === SIGKILL) return false
    const depth = pidNamespaceDepth(pid)
    return depth !== null && depth > this.ownDepth
  }

  /** `cgroup.kill`, once per sweep of the forced phase: every member, one forked meanwhile too. */
  private killAll(): void {
    const live = [...this.members.values()].filter((m) => !m.gone).length
    try {
      if (!killCgroup(this.path)) return // removed (or another in its place): nothing of ours left in it
    } catch (err) {
      this.journal.degraded(err, 'cgroup')
      return this.signalEach() // each member through its pin, then
    }
    if (!this.killed) this.journal.sent(this.fields, { signal: 'SIGKILL', atMs: this.journal.elapsed(), processes: Math.max(1, live), cgroup: true })
    this.killed = true
  }
}
