/**
 * The Supervisor's persistent registry (`new Supervisor({ stateFile })`): what it started, written
 * to a small JSON file atomically (temp file + rename) as it goes, so that the next supervisor on
 * the same file, after this process died without cleaning up (SIGKILL, OOM), finds the leftovers.
 *
 * Trust, in three steps, before anything is signalled:
 * - the file and its folders are this user's (or root's) alone, checked on the opened descriptor
 *   (state-file-trust.ts); otherwise the constructor throws ERR_REAPKIT_STATE_FILE_UNSAFE;
 * - a record names a process by pid AND start time: a leftover is acted on only if a process with
 *   that pid still runs and started at that same time, pinned by pidfd before the check, so a
 *   recycled pid is dropped, never signalled;
 * - and the process proves it is ours (Linux): each incarnation draws a random token and puts it in
 *   the environment of every child it spawns (REAPKIT_SUPERVISOR_TOKEN); a leftover counts only if
 *   /proc/PID/environ, which only its owner and root can read, carries the token its record names.
 *   Matching a pid and a start time anyone can read in /proc is not enough. A child registered
 *   with adopt() (spawned elsewhere, without the token) cannot prove itself: its record is dropped
 *   as 'unproven' by the next incarnation, never signalled.
 * A torn or unreadable file is reported, not thrown.
 *
 * Children with a restart policy also leave their recent restarts in it (by request id): the next
 * supervisor's first spawn() of the same request id continues that intensity window rather than start a
 * fresh one, so a host that crash-loops with its child cannot restart it without limit (their
 * bookkeeping: supervisor/state-restarts.ts).
 * A child that is a container client also records its run (supervisor/state-containers.ts): the
 * container outlives a SIGKILLed supervisor, so the next incarnation stops it through the engine.
 * A run stays in the file (top-level `containers`) after its client exits until its container is
 * confirmed gone. A child spawned with { cgroup: true } records its cgroup (path and id); the next
 * incarnation ends the cgroups its file names, and only those, or moves an adopted child's into one
 * of its own (supervisor/state-cgroups.ts).
 * The args of any engine command (docker, podman, nerdctl: a run or not) are
 * written with the values of their secret flags (`-e KEY=value` in every spelling, `--creds`...:
 * command.ts's redactRunArgs) redacted: the file names what ran, never a secret given to it.
 */
import { closeSync, constants as fsConstants, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs'
import { resolve } from 'node:path'
import { ReapkitError } from '../../ground/errors'
import { RestartTimes } from './state-restarts'
import { openProcess, type ProcessHandle } from '../../mechanisms/handle'
import { type KillResult, killProcessGracefully } from '../../mechanisms/kill'
import { type Logger, logEvent } from '../../ground/logger'
import { KILL_CONFIRM_MS_DEFAULT } from '../../ground/config'
import { processRow } from '../../mechanisms/proctable'
import { stopRecordedContainer, withContainers } from '../../mechanisms/container/child'
import { redactRunArgs } from '../../mechanisms/container/command'
import type { ContainerOutcome, ContainerRecord } from '../../mechanisms/container/stop'
import { type StateContainer, stopLeftoverContainer, toStateContainer } from './state-containers'
import {
  cgroupOfChild,
  checkRecordedCgroups,
  endPredecessorCgroups,
  type LeftoverCgroup,
  moveAdoptedCgroup,
  type RecordedCgroup,
  recordedCgroupExists,
} from './state-cgroups'
import { checkStateFolder } from '../state-file-trust'
import { copyRecord, type ProcessRecord } from './record'
import { type Owner, readRecords, type StateRecord } from './state-records'

/** The environment variable that carries an incarnation's token into the children it spawns. */
export const STATE_TOKEN_ENV = 'REAPKIT_SUPERVISOR_TOKEN'

export interface LeftoverReport {
  /** Processes of a previous incarnation found still running (same pid and start time). */
  found: Array<{ pid: number; pgid: number | null; requestId: string | number | null; command: string }>
  /**
   * Records dropped unsignalled: the process is gone, its pid now names another process, or it
   * cannot prove it was spawned by the supervisor that wrote the record (no matching token).
   */
  dropped: Array<{ pid: number; reason: 'gone' | 'recycled' | 'unproven' }>
  /** With onLeftovers 'stop' (the default): each found process's graceful stop. */
  stopped: KillResult[]
  /** With onLeftovers 'adopt': their records, now in the registry with status 'adopted'. */
  adopted: ProcessRecord[]
  /** True when the file could not be parsed (e.g. torn by a crash mid-write): nothing was acted on. */
  corrupt: boolean
  /**
   * The container step for each container run the file named whose client was not adopted (its
   * client gone, stopped, or unproven): stopped through its engine, by its run label.
   */
  containers: ContainerOutcome[]
  /**
   * The cgroups the file records (its children's, spawn({ cgroup: true })) that are still there:
   * each ended with `cgroup.kill` once the found processes' stops are over; an adopted child's is
   * not ended but moved into a cgroup of this incarnation's (supervisor/state-cgroups.ts).
   */
  cgroups: LeftoverCgroup[]
}

interface Adopted {
  record: ProcessRecord
  handle: ProcessHandle
  stopping: number
}

export interface StateHooks {
  graceMs: number
  logger: Logger
  /** The supervisor's 'status' event. */
  emit(record: ProcessRecord): void
}



/**
 * Does process `pid` carry `token` in the environment it was started with? Linux reads
 * /proc/PID/environ (its owner and root only); elsewhere there is no such file and the answer is
 * 'unchecked' (pid and start time alone decide there; see docs/supervisor.md, "Who may steer it").
 */
function carriesToken(pid: number, token: string | null): 'proven' | 'unproven' | 'unchecked' {
  if (process.platform !== 'linux') return 'unchecked'
  if (token === null) return 'unproven'
  let environ: string
  try {
    environ = readFileSync(`/proc/${pid}/environ`, 'latin1')
  } catch {
    return 'unproven' // gone, or not ours to read (EACCES): either way nothing to act on
  }
  return environ.split('\0').includes(`${STATE_TOKEN_ENV}=${token}`) ? 'proven' : 'unproven'
}

/**
 * Is a record's process a leftover? A handle pinning it when it runs with the recorded start time
 * and proves it is ours; otherwise why its record is dropped, unsignalled.
 */
function examine(rec: StateRecord, file: string, logger: Logger): ProcessHandle | 'gone' | 'recycled' | 'unproven' {
  let handle: ProcessHandle
  try {
    handle = openProcess(rec.pid)
  } catch {
    return 'gone'
  }
  // Checked after the pidfd exists: a match means the pidfd pins the recorded process. The
  // environment is read before the start time: if the start time still matches after it, the
  // environment read was the recorded process's own.
  const proof = carriesToken(rec.pid, rec.token)
  const row = processRow(rec.pid)
  if (!row || row.state === 'Z' || row.start !== rec.start) {
    handle.close()
    return !row || row.state === 'Z' ? 'gone' : 'recycled'
  }
  if (proof === 'unproven') {
    handle.close()
    logEvent(logger, 'warn', 'state.unproven', { file, pid: rec.pid })
    return 'unproven'
  }
  return handle
}

/** Is the recorded owner still running (same pid, same start time)? */
function ownerAlive(owner: Owner): boolean {
  const row = processRow(owner.pid)
  return row !== null && row.state !== 'Z' && row.start === owner.start
}

// State files this process's supervisors hold: two supervisors on one file would stop each other's children.
const held = new Set<string>()

export class SupervisorState {
  readonly leftovers: Promise<LeftoverReport>
  readonly #file: string
  readonly #hooks: StateHooks
  readonly #records = new Map<number, StateRecord>()
  readonly #adopted = new Map<number, Adopted>()
  #restarts = new RestartTimes()
  /** Container runs whose client has exited (or was a predecessor's), by run id, until confirmed gone. */
  readonly #retiring = new Map<string, StateContainer>()
  /** This incarnation's container clients: their live records (a stop under way is joined through them). */
  readonly #live = new Map<number, ContainerRecord>()
  /** Cgroups whose child has exited (or was a predecessor's), by path, until they are removed: the next incarnation ends them. */
  readonly #cgroupsLeft = new Map<string, RecordedCgroup>()
  #writeQueued = false
  #closed = false

  readonly #owner: Owner | null
  /** This incarnation's proof: put in the environment of every child the supervisor spawns. */
  // node:crypto is loaded here, only by a supervisor with a state file: not at require('reapkit').
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  readonly token = (require('node:crypto') as typeof import('node:crypto')).randomBytes(16).toString('hex')

  constructor(file: string, onLeftovers: 'stop' | 'adopt', hooks: StateHooks) {
    // Through its real folder from here on (never a symlinked one someone could retarget).
    this.#file = checkStateFolder(resolve(file))
    this.#hooks = hooks
    const { records, containers, cgroups: leftCgroups, owner, corrupt, restarts } = readRecords(this.#file)
    // A file whose writer still runs is not a crash's leftovers: its processes are that supervisor's,
    // alive and in use. Refuse it rather than stop (or steal) them.
    if (held.has(this.#file) || (owner !== null && owner.pid !== process.pid && ownerAlive(owner))) {
      throw new ReapkitError(
        'ERR_REAPKIT_STATE_FILE_IN_USE',
        `The state file ${this.#file} belongs to a supervisor that is still running (pid ${held.has(this.#file) ? process.pid : owner!.pid}); give each supervisor a file of its own`,
      )
    }
    held.add(this.#file)
    this.#restarts = restarts
    const self = processRow(process.pid)
    this.#owner = self ? { pid: process.pid, start: self.start } : null
    const report: LeftoverReport = { found: [], dropped: [], stopped: [], adopted: [], corrupt, containers: [], cgroups: [] }
    // The cgroups the file names (its own records' only): ended after the processes' own stops
    // (their graceful signal first), an adopted child's moved into one of ours: see state-cgroups.ts.
    const recorded = [...leftCgroups]
    if (corrupt) logEvent(hooks.logger, 'warn', 'state.corrupt', { file })
    const live: Array<{ rec: StateRecord; handle: ProcessHandle }> = []
    // A predecessor's container runs, except those of clients adopted below: stopped through the engine.
    const retired: StateContainer[] = [...containers]
    for (const rec of records) {
      const handle = examine(rec, file, hooks.logger)
      if (rec.cgroup && (typeof handle === 'string' || onLeftovers === 'stop')) recorded.push(rec.cgroup)
      if (typeof handle === 'string') {
        report.dropped.push({ pid: rec.pid, reason: handle })
        if (rec.container) retired.push(rec.container) // the container has its own proof: its labels
        continue
      }
      report.found.push({ pid: rec.pid, pgid: rec.pgid, requestId: rec.requestId, command: rec.command })
      live.push({ rec, handle })
      if (rec.container && onLeftovers === 'stop') retired.push(rec.container)
    }
    const containerSteps = Promise.all(retired.map((c) => this.#retire(c)))
    const cgroups = checkRecordedCgroups(recorded, hooks.logger)
    // Named in the file until they are removed (one that outlives its end stays for the next incarnation).
    for (const c of recorded) this.#cgroupsLeft.set(c.path, c)
    if (onLeftovers === 'adopt') {
      for (const { rec, handle } of live) {
        const moved = rec.cgroup && this.#moveCgroup(rec.cgroup)
        if (moved) rec.cgroup = moved
        else delete rec.cgroup
        report.adopted.push(copyRecord(this.#adopt(rec, handle).record))
      }
      const cgroupSteps = endPredecessorCgroups(cgroups, hooks.logger).then(this.#written)
      this.leftovers = Promise.all([containerSteps, cgroupSteps]).then(([outcomes, ended]) => ({ ...report, containers: outcomes, cgroups: ended }))
    } else {
      const stopping = Promise.all(
        live.map(async ({ handle }) => {
          try {
            return await killProcessGracefully(handle, { graceMs: hooks.graceMs, logger: hooks.logger })
          } finally {
            handle.close()
          }
        }),
      )
      const cgroupSteps = stopping.then(() => endPredecessorCgroups(cgroups, hooks.logger)).then(this.#written)
      this.leftovers = Promise.all([stopping, containerSteps, cgroupSteps]).then(([stopped, outcomes, ended]) => ({ ...report, stopped, containers: outcomes, cgroups: ended }))
    }
    logEvent(hooks.logger, 'info', 'state.leftovers', { file, found: report.found.length, dropped: report.dropped.length, action: onLeftovers })
    this.#write() // the file now describes this incarnation (the adopted, if any), not the last one
  }

  /** Writes the file now (the cgroups just removed leave it) and passes `value` on. */
  readonly #written = <T>(value: T): T => {
    if (!this.#closed) this.#write()
    return value
  }

  /** An adopted child's cgroup: moved into a fresh one of ours, or (the move refused, or not ours to check) kept as it is. */
  #moveCgroup(c: RecordedCgroup): RecordedCgroup | undefined {
    const [old] = checkRecordedCgroups([c], this.#hooks.logger)
    if (old === undefined) return recordedCgroupExists(c) ? c : undefined
    return moveAdoptedCgroup(old, this.#hooks.logger) ?? c
  }

  #adopt(rec: StateRecord, handle: ProcessHandle): Adopted {
    const record: ProcessRecord = {
      pid: rec.pid,
      pgid: rec.pgid,
      requestId: rec.requestId,
      command: rec.command,
      args: rec.args ?? [],
      status: 'adopted',
      startedAt: new Date(),
      exitedAt: null,
      exitCode: null,
      signal: null,
      restart: 'never', // nothing here knows how to start it again
      restarts: 0,
      incarnations: [],
      nextStartAt: null,
      error: null,
    }
    record.incarnations.push({ pid: rec.pid, pgid: rec.pgid, startedAt: record.startedAt, exitedAt: null, exitCode: null, signal: null, reason: 'start', delayMs: 0 })
    const a: Adopted = { record, handle, stopping: 0 }
    this.#adopted.set(rec.pid, a)
    this.#records.set(rec.pid, rec)
    void handle.exited.then(
      () => {
        if (a.stopping === 0) this.#settle(a, 'exited')
      },
      () => {},
    )
    return a
  }

  /** Returns the container step its exit started, if it had a container run. */
  #settle(a: Adopted, status: ProcessRecord['status']): Promise<ContainerOutcome> | undefined {
    if (a.record.status !== 'adopted') return undefined
    a.record.status = status
    a.record.exitedAt = new Date()
    a.record.incarnations[0]!.exitedAt = a.record.exitedAt
    a.handle.close()
    const step = this.remove(a.record.pid)
    this.#hooks.emit(copyRecord(a.record))
    return step
  }

  /**
   * A container run whose client is gone: kept in the file until its container step confirms it
   * gone (this incarnation's joins the step the client's exit started; a predecessor's is resolved
   * by its labels first).
   */
  #retire(c: StateContainer, live?: ContainerRecord): Promise<ContainerOutcome> {
    this.#retiring.set(c.runId, c)
    this.#queueWrite()
    const { graceMs, logger } = this.#hooks
    const step = live ? stopRecordedContainer(live, { graceMs, confirmMs: KILL_CONFIRM_MS_DEFAULT, logger }) : stopLeftoverContainer(c, { graceMs, logger })
    return step.then((outcome) => {
      // Written at once, not on the next turn: a caller may exit right after the leftovers report.
      if (outcome.state === 'gone' && this.#retiring.delete(c.runId) && !this.#closed) this.#write()
      return outcome
    })
  }

  /**
   * Records a process the supervisor just registered; `spawnedWithToken` when it was spawned with
   * this incarnation's token in its environment (adopted children were not).
   */
  add(pid: number, pgid: number | null, requestId: string | number | null, command: string, args: string[], spawnedWithToken: boolean, container?: ContainerRecord): void {
    const row = processRow(pid)
    // Already gone: nothing can be left of it under this pid; its container (if any) may be.
    if (!row) return void (container && this.#retire(toStateContainer(container), container))
    const run: { container?: StateContainer; cgroup?: RecordedCgroup } = container ? { container: toStateContainer(container) } : {}
    if (container) this.#live.set(pid, container)
    // Read now, while the child is still in the cgroup spawn() made for it.
    const cgroup = cgroupOfChild(pid)
    if (cgroup) run.cgroup = cgroup
    // An engine command's `-e KEY=value` (and other secret) values stay out of the file (a stop needs none of them).
    this.#records.set(pid, { pid, start: row.start, pgid, requestId, command, args: redactRunArgs(command, args), token: spawnedWithToken ? this.token : null, ...run })
    this.#queueWrite()
  }

  /** Forgets a process that exited; its container run, if any, stays until its container is gone (the step returned). */
  remove(pid: number): Promise<ContainerOutcome> | undefined {
    const rec = this.#records.get(pid)
    const live = this.#live.get(pid)
    this.#live.delete(pid)
    if (!rec || !this.#records.delete(pid)) return undefined
    // An escapee may hold its cgroup after it: named in the file until it is removed.
    if (rec.cgroup) this.#cgroupsLeft.set(rec.cgroup.path, rec.cgroup)
    this.#queueWrite()
    return rec.container ? this.#retire(rec.container, live) : undefined
  }

  /**
   * A request id's restarts within its window, as the previous supervisor on this file left them:
   * for the first spawn() of that id only (a later one in this supervisor starts afresh).
   */
  recentRestarts(requestId: string | number | null): number[] {
    return this.#restarts.claim(requestId)
  }

  /** A child with a restart policy restarted (or is about to): its restarts within the window now. */
  noteRestarts(requestId: string | number | null, recent: number[], windowMs: number): void {
    if (requestId === null) return
    this.#restarts.note(requestId, recent, windowMs)
    this.#queueWrite()
  }

  /** Writes the file now (a new incarnation must be on disk before anything else can happen). */
  flush(): void {
    if (!this.#closed) this.#write()
  }

  /** The adopted processes' records (copies). */
  list(): ProcessRecord[] {
    return [...this.#adopted.values()].map((a) => copyRecord(a.record))
  }

  /** The adopted processes' records themselves, to read only (metrics counts their statuses). */
  *records(): Iterable<Readonly<ProcessRecord>> {
    for (const a of this.#adopted.values()) yield a.record
  }

  find(pidOrRequestId: number | string): ProcessRecord | undefined {
    const a = this.#find(pidOrRequestId)
    return a ? copyRecord(a.record) : undefined
  }

  #find(key: number | string): Adopted | undefined {
    if (typeof key === 'number' && this.#adopted.has(key)) return this.#adopted.get(key)
    for (const a of this.#adopted.values()) if (a.record.requestId === key) return a
    return undefined
  }

  /** Stops an adopted process like any other (its group too, if it leads one); undefined if unknown. */
  terminate(pidOrRequestId: number | string, graceMs: number): Promise<KillResult> | undefined {
    const a = this.#find(pidOrRequestId)
    if (!a) return undefined
    return this.#stop(a, graceMs)
  }

  async #stop(a: Adopted, graceMs: number): Promise<KillResult> {
    a.stopping++
    try {
      const result = await killProcessGracefully(a.handle, { graceMs, logger: this.#hooks.logger })
      const step = this.#settle(a, result.escalated ? 'killed' : 'terminated')
      return step ? withContainers(result, [await step]) : result
    } finally {
      a.stopping--
    }
  }

  /** Stops every adopted process still running (shutdownAll). */
  async stopAll(graceMs: number): Promise<void> {
    await Promise.all([...this.#adopted.values()].filter((a) => a.record.status === 'adopted').map((a) => this.#stop(a, graceMs)))
  }

  /** The exit backstop: SIGKILL every adopted process still running, synchronously. */
  killAllSync(): void {
    for (const a of this.#adopted.values()) {
      if (a.record.status !== 'adopted' || a.handle.closed) continue
      try {
        a.handle.signal('SIGKILL')
      } catch {
        // gone already
      }
    }
  }

  /** Flushes the file now (and stops writing it): for dispose() and tests. */
  close(): void {
    if (this.#closed) return
    this.#write()
    this.#closed = true
    held.delete(this.#file)
  }

  // One write per event-loop turn however many processes started or ended in it.
  #queueWrite(): void {
    if (this.#writeQueued || this.#closed) return
    this.#writeQueued = true
    setImmediate(() => {
      this.#writeQueued = false
      if (!this.#closed) this.#write()
    }).unref()
  }

  #write(): void {
    const tmp = `${this.#file}.${process.pid}.tmp`
    const restarts = this.#restarts.toJSON()
    const containers = [...this.#retiring.values()]
    for (const [path, c] of this.#cgroupsLeft) if (!recordedCgroupExists(c)) this.#cgroupsLeft.delete(path)
    const cgroups = [...this.#cgroupsLeft.values()]
    const data = JSON.stringify({
      version: 1,
      owner: this.#owner,
      processes: [...this.#records.values()],
      restarts,
      ...(containers.length > 0 ? { containers } : {}),
      ...(cgroups.length > 0 ? { cgroups } : {}),
    })
    try {
      // A fresh file of our own (never through a link someone left at the temporary name), 0600.
      rmSync(tmp, { force: true })
      const fd = openSync(tmp, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o600)
      try {
        writeSync(fd, `${data}\n`)
      } finally {
        closeSync(fd)
      }
      renameSync(tmp, this.#file)
    } catch (err) {
      rmSync(tmp, { force: true })
      logEvent(this.#hooks.logger, 'warn', 'state.write-failed', { file: this.#file, error: (err as Error).message })
    }
  }
}
