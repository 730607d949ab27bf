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
  setChildSubreaper,
} from './index'
import { typeError } from './ground/errors'
import { descendantsOf, processRow, type ProcessRow, readProcessTable } from './mechanisms/proctable'
// Stateless validators, bundled into this entry (no second copy of any process-global state).
import { describe, validateBoolean, validateMs, validateOptions, validatePid } from './ground/validate'

export type { CapturedProcess } from './testing/types'
import type { CapturedProcess } from './testing/types'
import { killSurvivors } from './testing/kill'
import { CaptureScope, live, toCaptured } from './testing/scope'

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

// Captures that asked for the subreaper flag, and the flag as it was before the first of them.
let subreaperCaptures = 0
let subreaperBefore: boolean | null = null

/** Starts capturing every process this one starts from now on. */
export function captureProcesses(options: CaptureOptions = {}): ProcessCapture {
  const { killTimeoutMs, wantSubreaper } = captureSpec(options)
  const scope = new CaptureScope(wantSubreaper) // before the flag: a throw here changes nothing
  if (wantSubreaper) holdSubreaper()
  let stopped = false
  const kill = (): Promise<CapturedProcess[]> => killSurvivors(scope, killTimeoutMs)
  return {
    subreaper: wantSubreaper,
    survivors: () => scope.survivorsNow().map((r) => scope.captured(r)),
    killSurvivors: kill,
    async assertNoSurvivors() {
      const found = scope.survivorsNow().map((r) => scope.captured(r))
      if (found.length === 0) return
      await kill()
      throw new ProcessLeakError(found)
    },
    stop() {
      if (stopped) return
      stopped = true
      if (wantSubreaper) releaseSubreaper()
    },
  }
}

/** The options, checked; and the capture's place (the main thread only). */
function captureSpec(options: CaptureOptions): { killTimeoutMs: number; wantSubreaper: boolean } {
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
  return { killTimeoutMs, wantSubreaper }
}

/** The first capture that asks for the subreaper flag sets it; the last to stop puts it back as it was. */
function holdSubreaper(): void {
  const before = isChildSubreaper()
  setChildSubreaper(true)
  if (subreaperCaptures === 0) subreaperBefore = before
  subreaperCaptures++
}

function releaseSubreaper(): void {
  subreaperCaptures--
  if (subreaperCaptures === 0 && subreaperBefore !== null) {
    setChildSubreaper(subreaperBefore)
    subreaperBefore = null
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
