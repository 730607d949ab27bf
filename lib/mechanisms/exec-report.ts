/**
 * spawn() through the exec helper, and the wait that makes what spawnedInfo() states true when it
 * is stated (POSIX; spawn.ts decides when to come here).
 *
 * libuv's spawn returns once it has exec'd the helper (native/exec_helper.c), and the helper forms
 * the group (setpgid), arms the death signal and execs the target only after that. Returning then
 * left a window (most spawns on a busy machine) where the child was still in our group:
 * `process.kill(-pid)` failed with ESRCH, a signal to our own group reached it, and a stop that
 * listed the group found nobody but the leader, so whatever the leader forked next escaped the stop.
 *
 * So the helper reports through a pipe of its own (native/exec_report.cc):
 * - the pipe is made close-on-exec at both ends, so a child spawned at the same moment elsewhere in
 *   this process (a worker) never keeps it past its exec;
 * - its write end goes to the child as one extra stdio entry, at index max(3, stdio.length), and the
 *   helper is told that index; libuv dup2s it into place, and the helper sets close-on-exec on it
 *   again first thing, so the target never inherits it;
 * - the helper writes 'R' once the group exists and the death signal is armed, then execs the
 *   target: success is EOF (the exec closed the pipe); a failure is one record (the step and its
 *   errno), then the helper exits 127/126;
 * - the parent closes its copy of the write end right after Node's spawn returns, and reads until
 *   EOF in one bounded native wait (REAPKIT_SPAWN_REPORT_MS, default 5 s).
 * spawn() therefore returns once the group is formed and the target exec'd, the same promise
 * libuv's own spawn makes for its exec. On the bound (a stalled machine, a stopped child), spawn()
 * returns anyway, says so (startup: 'timeout'), states only what the helper confirmed, and keeps
 * reading in the background to state the rest when it comes.
 *
 * Why not libuv's `detached` (setsid): exact, but a new session loses the controlling terminal, and
 * the child must stay in our session (an interactive child's group is to be made the terminal's
 * foreground group). Why not setpgid from here: once the child has exec'd the helper (which libuv
 * has done when spawn returns), setpgid on it fails with EACCES.
 *
 * A failed exec (ENOENT, EACCES...) is reported as Node reports it: an 'error' event with code,
 * errno, syscall 'spawn <file>', path and spawnargs, no 'spawn' and no 'exit' event, and no pid.
 */
import type { ChildProcess, SpawnOptions as NodeSpawnOptions, StdioOptions } from 'node:child_process'
import { spawnReportMs } from '../ground/config'
import { nativeBinding, type ExecReport } from '../ground/native'
import { signalName } from '../ground/validate'
import type { SpawnFunction } from './node-spawn'
import pidNamespacePart from './lazy/pid-namespace'

/** How the child's start was confirmed: see SpawnedInfo.startup. */
export type Startup = 'exec' | 'timeout' | 'none'

export interface HelperSpawn {
  child: ChildProcess
  /** The group exists (the helper said so), or null. */
  pgid: number | null
  parentDeathSignal: NodeJS.Signals | null
  startup: Startup
  /** With pidNamespace: whether the command sees the namespace's own /proc (the init said so), else undefined. */
  ownProc?: boolean
  /** With startup 'timeout': call with a setter, which is told what the helper confirms later. */
  onLate?: (confirm: (late: { pgid: number | null; parentDeathSignal: NodeJS.Signals | null; ownProc?: boolean }) => void) => void
}

interface Request {
  helper: string
  group: boolean
  /** Also hand the controlling terminal's foreground to the new group (lib/mechanisms/terminal.ts). */
  foreground?: boolean
  sig: number
  /** Linux: the cgroup the helper joins before anything else (cgroup/make.ts made it), or undefined. */
  cgroup?: string
  /** Linux: run the command in a PID namespace of its own (native/exec_pidns.c); sig is then 9. */
  pidNamespace?: boolean
  file: string
  /**
   * What the helper execs first: the file spawn-args.ts found on PATH for a bare `file` (the helper
   * falls back to execvp(file) on an error execvp skips), or `file` itself (exec'd as execvp does),
   * as when left out.
   */
  path?: string
  argv0: string
  argv: string[]
  nodeOptions: NodeSpawnOptions
}

const STDIO_NAMES = new Set(['pipe', 'ignore', 'inherit', 'overlapped'])

// This process's pid as the helper's argument: process.pid is a getpid() at every read.
let pidText: string | undefined
const ownPid = (): string => (pidText ??= String(process.pid))

/**
 * The caller's stdio as an array, or null when it is not one we can extend (an invalid value: Node
 * then throws its own error, without the report).
 */
function stdioArray(stdio: StdioOptions | undefined): Array<unknown> | null {
  if (stdio === undefined || stdio === null) return []
  if (typeof stdio === 'string') return STDIO_NAMES.has(stdio) ? [stdio, stdio, stdio] : null
  return Array.isArray(stdio) ? [...stdio] : null
}

/** Closes one of the pipe's descriptors (the addon's, closed natively: see execReportClose). */
function closeFd(fd: number): void {
  try {
    nativeBinding()!.execReportClose(fd)
  } catch {
    // EBADF: already closed
  }
}

/** Opens the report pipe; null when it cannot be (EMFILE...): the spawn then goes on without it. */
function openPipe(): [number, number] | null {
  const binding = nativeBinding()
  if (!binding || typeof binding.execReportPipe !== 'function') return null
  try {
    return binding.execReportPipe()
  } catch {
    return null
  }
}

/**
 * Spawns through the helper with the report pipe, or returns null without spawning when there can
 * be no report (stdio Node would refuse, no descriptor for the pipe): the caller then uses Node's
 * own spawn, whose group (setsid) is in place when it returns, rather than state an unconfirmed one.
 */
export function spawnThroughHelper(nodeSpawn: SpawnFunction, req: Request): HelperSpawn | null {
  const stdio = stdioArray(req.nodeOptions.stdio)
  const pipe = stdio ? openPipe() : null
  if (!stdio || !pipe) return null
  // Past the caller's entries; Node fills the gap up to 3 with its defaults ('pipe'), as it would.
  const index = Math.max(3, stdio.length)
  while (stdio.length < index) stdio.push(undefined)
  stdio.push(pipe[1]) // (stdio is stdioArray's own copy)
  let child: ChildProcess
  try {
    const options: NodeSpawnOptions = { ...req.nodeOptions, shell: false, argv0: undefined, stdio: stdio as StdioOptions }
    const args: string[] = []
    if (req.cgroup !== undefined) args.push('--cgroup', req.cgroup)
    if (req.pidNamespace) args.push('--pid-namespace')
    if (req.path !== undefined && req.path !== req.file) args.push('--found', req.path)
    args.push(req.group ? (req.foreground ? '2' : '1') : '0', String(req.sig), ownPid(), String(index), req.file, req.argv0)
    for (const arg of req.argv) args.push(arg)
    child = nodeSpawn(req.helper, args, options)
  } catch (err) {
    closeFd(pipe[0])
    throw err
  } finally {
    closeFd(pipe[1]) // only the child holds the write end now: its exec or exit is our EOF
  }
  // What the caller asked for, not the helper (the helper is gone after its exec anyway).
  ;(child as { spawnfile: string }).spawnfile = req.file
  ;(child as { spawnargs: string[] }).spawnargs = [req.argv0, ...req.argv]
  if (child.pid === undefined) {
    // Node's own spawn failed (EAGAIN, EMFILE...) before it made child.stdio: its 'error' event says so.
    closeFd(pipe[0])
    return { child, pgid: null, parentDeathSignal: null, startup: 'none' }
  }
  // The report entry is ours: the caller sees the stdio it asked for (Node puts null there anyway).
  if (child.stdio.length > index) (child.stdio as unknown[]).length = index
  const applied = (ready: boolean) => ({
    pgid: ready && req.group ? child.pid! : null,
    parentDeathSignal: ready && req.sig > 0 ? signalName(req.sig) : null,
  })
  const report = waitForReport(pipe[0])
  if (report.step !== null) {
    if (!report.done) closeFd(pipe[0]) // the record is whole; its EOF only missed the bound
    failLikeNode(child, report, req.cgroup)
    return { child, pgid: null, parentDeathSignal: null, startup: 'exec' }
  }
  // Built by assignment (no spreads): this is every spawn's path.
  const started: HelperSpawn = { child, pgid: null, parentDeathSignal: null, startup: report.done ? 'exec' : 'timeout' }
  if (report.ready) {
    if (req.group) started.pgid = child.pid
    if (req.sig > 0) started.parentDeathSignal = signalName(req.sig)
  }
  if (report.ownProc !== undefined) started.ownProc = report.ownProc
  if (!report.done) {
    started.onLate = (confirm) => readLate(pipe[0], child, report.ready, (ready, ownProc) => confirm({ ...applied(ready), ...(ownProc !== undefined ? { ownProc } : {}) }))
  }
  return started
}

/** The bounded wait; a failed poll counts as a timeout (the fd stays ours, read on in the background). */
function waitForReport(fd: number): ExecReport {
  const binding = nativeBinding()!
  try {
    // The packed answer where the addon has it (no object built natively at every spawn).
    if (typeof binding.execReportWaitCode === 'function') return unpackReport(binding.execReportWaitCode(fd, spawnReportMs()))
    return binding.execReportWait(fd, spawnReportMs())
  } catch {
    return { ready: false, done: false, step: null, errno: 0 }
  }
}

/** The failed step by its letter (native/exec_report.cc's StepName). */
const STEPS: Readonly<Record<string, ExecReport['step']>> = { c: 'cgroup', g: 'setpgid', p: 'prctl', n: 'unshare', f: 'fork', e: 'exec' }

/** execReportWaitCode's int32 as the ExecReport execReportWait gives: see native/exec_report.cc for the bits. */
export function unpackReport(code: number): ExecReport {
  const letter = (code >> 8) & 0xff
  const step = letter === 0 ? null : (STEPS[String.fromCharCode(letter)] ?? null)
  const report: ExecReport = { ready: (code & 1) !== 0, done: (code & 2) !== 0, step, errno: step === null ? 0 : code >>> 16 }
  if ((code & 4) !== 0) report.ownProc = (code & 8) !== 0
  return report
}

/**
 * After a timeout: reads the rest of the report without blocking (a pipe socket, unref'd), and
 * confirms the group once the helper says 'R' (and, in a PID namespace, its /proc once the init says
 * 'p' or 'o'). A failure after the timeout stays what it is then:
 * 'spawn' was emitted, and the exit (127/126) follows.
 */
function readLate(fd: number, child: ChildProcess, alreadyReady: boolean, confirm: (ready: boolean, ownProc?: boolean) => void): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const net = require('node:net') as typeof import('node:net')
  let socket: import('node:net').Socket
  try {
    socket = new net.Socket({ fd, readable: true, writable: false })
  } catch {
    closeFd(fd)
    return
  }
  socket.unref()
  let ready = alreadyReady
  let failed = false
  socket.on('data', (chunk: Buffer) => {
    for (const byte of chunk) {
      if (failed) return // a failure record's bytes: nothing more to confirm
      if (byte === 0x46 /* 'F' */) failed = true
      else if (byte === 0x52 /* 'R' */ && !ready) {
        ready = true
        confirm(true)
      } else if (byte === 0x70 /* 'p' */ || byte === 0x6f /* 'o' */) confirm(ready, byte === 0x70)
    }
  })
  const done = (): void => {
    socket.destroy()
  }
  socket.once('end', done)
  socket.once('error', done)
  child.once('exit', done)
}

/** A join that failed fails the spawn (never an uncontained child): the error says so and where. */
function explainCgroup(err: Error & { cgroup?: string; syscall?: string }, cgroup: string | undefined): void {
  err.message = `${err.message}: could not join the child's cgroup ${cgroup ?? ''} (the command never ran)`
  err.cgroup = cgroup
}

/**
 * Reports a failed helper step as Node reports a failed spawn: Node's own exit handler, given the
 * negative errno, emits 'error' with code, errno, syscall 'spawn <file>', path and spawnargs, and no
 * 'exit'; the 'spawn' event Node queued is dropped; pid is undefined, as after Node's ENOENT. All
 * of it happens when libuv reaps the helper (a few ms later), not on the next tick as in Node.
 * Where Node's internals differ from this shape (`_handle.onexit`), the child is left as it is: a
 * 'spawn' event and an exit with 127 (126), which is what the helper exits with anyway.
 */
function failLikeNode(child: ChildProcess, report: ExecReport, cgroup: string | undefined): void {
  const handle = (child as unknown as { _handle?: { onexit?: unknown } })._handle
  const onexit = handle?.onexit
  if (!handle || typeof onexit !== 'function' || !(report.errno > 0)) return
  handle.onexit = (_code: number, _signal: string | null) => (onexit as (c: number, s: null) => void)(-report.errno, null)
  const own = child.emit as (this: ChildProcess, event: string | symbol, ...args: unknown[]) => boolean
  child.emit = function emit(this: ChildProcess, event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'spawn') return false
    if (event === 'error') {
      delete (child as { emit?: unknown }).emit // the prototype's again
      // Node's error names the exec; a failed join must say it was the cgroup (the target never ran).
      if (report.step === 'cgroup' && args[0] instanceof Error) explainCgroup(args[0], cgroup)
      if (report.step === 'unshare' && args[0] instanceof Error) pidNamespacePart().explainRefusal(args[0])
    }
    return own.call(this, event, ...args)
  } as ChildProcess['emit']
  ;(child as { pid: number | undefined }).pid = undefined
}
