/**
 * reapkit/testing: helpers for integration tests that start processes (vitest first; any runner
 * with beforeEach/afterEach hooks works).
 *
 *   captureProcesses()  from now on, every process this one starts is captured, including the
 *                       descendants that leave their group or session (on Linux the test process
 *                       becomes a child subreaper, so they are re-parented to it instead of escaping)
 *                       and, on Linux, every process in a cgroup spawn({ cgroup: true }) made during
 *                       the capture, wherever it was re-parented (no subreaper needed), ended by
 *                       `cgroup.kill`;
 *                       `assertNoSurvivors()` fails with a readable list (pid, age, command), after
 *                       killing them, so one failing test does not poison the next;
 *   installLeakGuard()  the same around every test, from the runner's hooks;
 *   measureReap()       how long a stop took: from the call to the last process of the target's
 *                       tree gone, by kernel exit events, with every process's own figure.
 *
 * Only processes that descend from this one (or share a process group with one that does, or are
 * in a cgroup this process made during the capture) and started after the capture began are ever
 * signalled, each pinned by a pidfd and checked by start time first; a cgroup of ours is ended by
 * `cgroup.kill`, which names no pid at all.
 */
// Node's types for this entry's .d.ts in a project with `"types": []` (see lib/index.ts).
/// <reference types="node" preserve="true" />
import { ChildProcess } from 'node:child_process'
import { isMainThread } from 'node:worker_threads'
import {
  capabilities,
  isChildSubreaper,
  openProcess,
  type ProcessHandle,
  ReapkitError,
  reapAdopted,
  setChildSubreaper,
} from './index'
import { typeError } from './ground/errors'
import { descendantsOf, processRow, type ProcessRow, readProcessTable } from './mechanisms/proctable'
// Stateless validators, bundled into this entry (no second copy of any process-global state).
import { describe, validateBoolean, validateMs, validateOptions, validatePid } from './ground/validate'
// Stateless too: our own cgroups found by their names (mechanisms/cgroup/name.ts), ended exactly.
import { endFoundCgroup } from './mechanisms/cgroup/end'
import { type FoundCgroup, listOwnCgroups, membersOf, populatedState } from './mechanisms/cgroup/list'

/** A process found by a capture or timed by measureReap. */
export interface CapturedProcess {
  pid: number
  ppid: number
  pgid: number
  /** Milliseconds since it started, when it was found. */
  ageMs: number
  command: string
  /** The cgroup it was found in (one spawn({ cgroup: true }) made during the capture), when found through one. */
  cgroup?: string
}

/** Thrown by assertNoSurvivors (code ERR_REAPKIT_PROCESS_LEAK): the processes that outlived the test. */
export class ProcessLeakError extends ReapkitError {
  readonly survivors: CapturedProcess[]
  constructor(survivors: CapturedProcess[]) {
    const lines = survivors.map((p) => `  pid ${p.pid} (ppid ${p.ppid}, pgid ${p.pgid}${p.cgroup ? `, in cgroup ${p.cgroup}` : ''}), age ${p.ageMs} ms: ${p.command}`)
    super(
      'ERR_REAPKIT_PROCESS_LEAK',
      `${survivors.length} process${survivors.length === 1 ? '' : 'es'} outlived the test (now killed):\n${lines.join('\n')}`,
    )
    this.name = 'ProcessLeakError'
    this.survivors = survivors
  }
}

export interface CaptureOptions {
  /**
   * Become a child subreaper for the capture's duration, so descendants that daemonize stay ours
   * (Linux; default true where available). Adopted zombies are reaped by the capture.
   */
  subreaper?: boolean
  /** Bound on the wait for killed survivors to be gone (default 5000 ms). */
  killTimeoutMs?: number
}

export interface ProcessCapture {
  /** Whether descendants that leave their group or session are captured too (Linux subreaper). */
  readonly subreaper: boolean
  /** Live processes started since the capture began that are still here. */
  survivors(): CapturedProcess[]
  /** SIGKILLs every survivor (pinned, re-checked), waits for them (bounded), reaps what was adopted. */
  killSurvivors(): Promise<CapturedProcess[]>
  /** Throws ProcessLeakError listing the survivors, after killing them; resolves when there are none. */
  assertNoSurvivors(): Promise<void>
  /** Ends the capture (the subreaper flag goes back as it was). Idempotent. */
  stop(): void
}

const key = (row: { pid: number; start: string }): string => `${row.pid}:${row.start}`
const toCaptured = (r: ProcessRow): CapturedProcess => ({ pid: r.pid, ppid: r.ppid, pgid: r.pgid, ageMs: r.ageMs, command: r.command })
const live = (r: ProcessRow): boolean => r.state !== 'Z' && r.state !== 'X'

/** Where spawn({ cgroup: true }) makes this process's cgroups (our own cgroup), or null where it makes none. */
function cgroupParent(): string | null {
  const where = capabilities().cgroup
  return where.available && where.path ? where.path : null
}

const cgroupKey = (c: FoundCgroup): string => `${c.path}:${c.id}`

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

// Captures that asked for the subreaper flag, and the flag as it was before the first of them.
let subreaperCaptures = 0
let subreaperBefore: boolean | null = null

/** Starts capturing every process this one starts from now on. */
export function captureProcesses(options: CaptureOptions = {}): ProcessCapture {
  options = validateOptions(options)
  const killTimeoutMs = validateMs(options.killTimeoutMs, 'killTimeoutMs') ?? 5000
  const wantSubreaper = validateBoolean(options.subreaper, 'subreaper') ?? capabilities().subreaper
  if (wantSubreaper && !capabilities().subreaper) {
    throw new ReapkitError('ENOTSUP', 'captureProcesses({ subreaper: true }): child subreapers exist on Linux only')
  }
  // Worker threads share the process: "descendants of this process" would be every thread's
  // children (another test file's, under a threads pool), and the reaper could take statuses their
  // libuv loops wait for. The capture belongs to the main thread (vitest's default forks pool).
  if (!isMainThread) {
    throw new ReapkitError('ERR_REAPKIT_MAIN_THREAD_ONLY', 'captureProcesses() runs on the main thread only (use a forks pool, not threads)')
  }
  recordLibuvChildren()
  const self = process.pid
  const baseline = new Set<string>()
  for (const row of readProcessTable()) baseline.add(key(row)) // before the flag: a throw here changes nothing
  // Our cgroups that exist already (a server of beforeAll's): their members are not this capture's.
  const cgroupsAt = cgroupParent()
  const cgroupBaseline = new Set(cgroupsAt === null ? [] : listOwnCgroups(cgroupsAt).map(cgroupKey))
  /** The cgroups this process made since the capture began. */
  const newCgroups = (): FoundCgroup[] => (cgroupsAt === null ? [] : listOwnCgroups(cgroupsAt).filter((c) => !cgroupBaseline.has(cgroupKey(c))))
  /** Which cgroup a survivor was found in (the last look's). */
  const inCgroup = new Map<number, string>()
  const captured = (r: ProcessRow): CapturedProcess => {
    const cg = inCgroup.get(r.pid)
    return cg === undefined ? toCaptured(r) : { ...toCaptured(r), cgroup: cg }
  }
  if (wantSubreaper) {
    const before = isChildSubreaper()
    setChildSubreaper(true)
    if (subreaperCaptures === 0) subreaperBefore = before
    subreaperCaptures++
  }
  // Process groups that new processes created (leader pid -> its start): their members are ours
  // wherever they are re-parented. Never a group that existed before (ours, the runner's).
  const groups = new Map<number, string>()
  let stopped = false

  const fresh = (table: ProcessRow[]): ProcessRow[] => {
    const byPid = new Map(table.map((r) => [r.pid, r]))
    // Down from this process through new processes only: the children of a process that existed
    // before the capture (a server started in beforeAll) are that process's business, not the test's.
    const found = new Map<number, ProcessRow>()
    for (const row of descendantsOf(self, table, (r) => !baseline.has(key(r)))) {
      found.set(row.pid, row)
      if (row.pgid === row.pid && !groups.has(row.pid)) groups.set(row.pid, key(row))
    }
    for (const [pgid, leader] of groups) {
      // A group id is a pid: once its group is empty it can come back as an unrelated group.
      const now = byPid.get(pgid)
      if (now && key(now) !== leader) groups.delete(pgid)
    }
    for (const row of table) {
      if (row.pid !== self && groups.has(row.pgid) && !baseline.has(key(row)) && !found.has(row.pid)) found.set(row.pid, row)
    }
    // The members of our new cgroups, wherever they were re-parented: a daemon that double-forked
    // away with no subreaper to catch it is still in its cgroup.
    for (const cg of newCgroups()) {
      for (const pid of membersNow(cg.path)) {
        const row = byPid.get(pid)
        if (row && row.pid !== self && !baseline.has(key(row))) {
          found.set(pid, row)
          inCgroup.set(pid, cg.path)
        }
      }
    }
    return [...found.values()]
  }

  /** Reaps the zombies adopted as subreaper: our children that libuv did not spawn and that came later. */
  const reapOrphans = (table: ProcessRow[]): void => {
    if (!wantSubreaper) return
    for (const row of table) {
      if (row.ppid !== self || row.state !== 'Z' || libuvChildren.has(row.pid) || baseline.has(key(row))) continue
      try {
        reapAdopted(row.pid)
      } catch {
        // ECHILD: someone else reaped it meanwhile
      }
    }
  }

  const survivorsNow = (): ProcessRow[] => {
    const table = readProcessTable()
    reapOrphans(table)
    return fresh(table).filter(live)
  }

  const killSurvivors = async (): Promise<CapturedProcess[]> => {
    const killed: CapturedProcess[] = []
    // Our new cgroups first: `cgroup.kill` ends every member at once (one forked meanwhile too,
    // with no pid to race), then the kernel's `populated 0`, then the cgroup's removal.
    const before = survivorsNow()
    const populated = newCgroups().filter((c) => {
      try {
        return populatedState(c.path) === 'populated'
      } catch {
        return false // unreadable: its members are still found by pid below
      }
    })
    if (populated.length > 0) {
      const ended = await Promise.all(populated.map((c) => endFoundCgroup(c, { confirmMs: killTimeoutMs })))
      const done = new Set(ended.filter((e) => e.killed).map((e) => e.path))
      for (const row of before) if (done.has(inCgroup.get(row.pid) ?? '')) killed.push(captured(row))
    }
    // A few rounds: a parent killed in one round may have forked in between.
    for (let round = 0; round < 3; round++) {
      const rows = survivorsNow()
      if (rows.length === 0) break
      const handles: ProcessHandle[] = []
      for (const row of rows) {
        let handle: ProcessHandle
        try {
          handle = openProcess(row.pid)
        } catch {
          continue // gone already
        }
        // Pinned: now make sure the pid still names the process we found, then signal through the pin.
        if (processRow(row.pid)?.start !== row.start) {
          handle.close()
          continue
        }
        try {
          handle.signal('SIGKILL')
          killed.push(captured(row))
          handles.push(handle)
        } catch {
          handle.close()
        }
      }
      await Promise.all(
        handles.map(async (h) => {
          let timer: NodeJS.Timeout | undefined
          try {
            await Promise.race([h.exited, new Promise((r) => (timer = setTimeout(r, killTimeoutMs)))])
          } finally {
            clearTimeout(timer)
            h.close()
          }
        }),
      )
    }
    reapOrphans(readProcessTable())
    return killed
  }

  return {
    subreaper: wantSubreaper,
    survivors: () => survivorsNow().map(captured),
    killSurvivors,
    async assertNoSurvivors() {
      const found = survivorsNow().map(captured)
      if (found.length === 0) return
      await killSurvivors()
      throw new ProcessLeakError(found)
    },
    stop() {
      if (stopped) return
      stopped = true
      if (!wantSubreaper) return
      subreaperCaptures--
      if (subreaperCaptures === 0 && subreaperBefore !== null) {
        setChildSubreaper(subreaperBefore)
        subreaperBefore = null
      }
    },
  }
}

/** The hook functions of a test runner: vitest's, jest's and mocha's all fit. */
export interface TestHooks {
  beforeEach(fn: () => unknown): unknown
  afterEach(fn: () => unknown): unknown
}

/**
 * Captures the processes of every test and fails the test that leaves one behind (after killing
 * it). In a vitest setup file: `installLeakGuard({ beforeEach, afterEach })`.
 */
export function installLeakGuard(hooks: TestHooks, options: CaptureOptions = {}): void {
  if (typeof hooks?.beforeEach !== 'function' || typeof hooks?.afterEach !== 'function') {
    throw typeError('ERR_INVALID_ARG_TYPE', 'installLeakGuard() takes the runner\'s hooks: { beforeEach, afterEach }')
  }
  options = validateOptions(options)
  validateMs(options.killTimeoutMs, 'killTimeoutMs')
  let capture: ProcessCapture | null = null
  hooks.beforeEach(() => {
    capture = captureProcesses(options)
  })
  hooks.afterEach(async () => {
    const current = capture
    capture = null
    if (!current) return
    try {
      await current.assertNoSurvivors()
    } finally {
      current.stop()
    }
  })
}

export type ReapTarget = number | ChildProcess | Array<number | ChildProcess>

export interface MeasureReapOptions {
  /** Bound on the wait for the last process (default 10000 ms); those still alive are `survivors`. */
  timeoutMs?: number
}

export interface ReapFigures {
  /** How many processes were watched: the targets, their descendants and their groups' members. */
  processes: number
  /** From the call to stop() to the last watched process gone; null when some survived the timeout. */
  elapsedMs: number | null
  /** How long stop() itself took to resolve. */
  stopMs: number
  /** Each process's exit, in milliseconds from the call to stop(), in order. */
  exits: Array<CapturedProcess & { ms: number }>
  /** Processes still alive at the timeout (not killed: that is the capture's job). */
  survivors: CapturedProcess[]
}

/**
 * Times a stop: pins every process of the target's tree (its descendants and its process group's
 * members, as they are now), calls `stop`, and waits by kernel exit events until each is gone or
 * the timeout passes. For benchmarking a shutdown path: `await measureReap(child, () => client.close())`.
 */
export async function measureReap(
  target: ReapTarget,
  stop: () => unknown,
  options: MeasureReapOptions = {},
): Promise<ReapFigures> {
  options = validateOptions(options)
  const timeoutMs = validateMs(options.timeoutMs, 'timeoutMs') ?? 10_000
  if (typeof stop !== 'function') throw typeError('ERR_INVALID_ARG_TYPE', `The "stop" argument must be a function. Received ${describe(stop)}`)
  const roots = (Array.isArray(target) ? target : [target]).map((t) => {
    if (t instanceof ChildProcess) {
      if (t.pid === undefined) throw typeError('ERR_INVALID_ARG_VALUE', 'measureReap: the child process was never spawned (it has no pid)')
      return validatePid(t.pid, 'target')
    }
    return validatePid(t, 'target')
  })
  const table = readProcessTable()
  const rows = new Map<number, ProcessRow>()
  for (const pid of roots) {
    const root = table.find((r) => r.pid === pid)
    if (root) rows.set(pid, root)
    for (const row of descendantsOf(pid, table)) rows.set(row.pid, row)
    // The group it leads (or led: members outlive their leader, and the group id stays theirs).
    if (!root || root.pgid === pid) for (const row of table) if (row.pgid === pid) rows.set(row.pid, row)
  }
  const watched: Array<{ row: ProcessRow; handle: ProcessHandle }> = []
  for (const row of rows.values()) {
    if (!live(row)) continue
    try {
      const handle = openProcess(row.pid)
      if (processRow(row.pid)?.start === row.start) watched.push({ row, handle })
      else handle.close()
    } catch {
      // exited meanwhile
    }
  }
  const exits: ReapFigures['exits'] = []
  const t0 = performance.now()
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))
  try {
    const gone = Promise.all(
      watched.map(({ row, handle }) =>
        handle.exited.then(() => {
          exits.push({ ...toCaptured(row), ms: performance.now() - t0 })
        }),
      ),
    )
    gone.catch(() => {}) // if stop() throws, the handles close below: nobody waits on this any more
    await Promise.race([Promise.resolve().then(stop), timedOut]) // bounded too
    const stopMs = performance.now() - t0
    await Promise.race([gone, timedOut])
    const done = new Set(exits.map((e) => e.pid))
    const survivors = watched.filter(({ row }) => !done.has(row.pid)).map(({ row }) => toCaptured(row))
    exits.sort((a, b) => a.ms - b.ms)
    return {
      processes: watched.length,
      elapsedMs: survivors.length === 0 ? (exits.at(-1)?.ms ?? 0) : null,
      stopMs,
      exits,
      survivors,
    }
  } finally {
    clearTimeout(timer)
    for (const { handle } of watched) handle.close()
  }
}
