/**
 * spawn(): child_process.spawn plus two guarantees, and it returns a real ChildProcess.
 *
 * - `group` (default true): the child leads its own process group, so the whole tree it starts
 *   (unless a member leaves the group with setsid) can be signalled and counted as one.
 * - `parentDeathSignal` (Linux, default 'SIGKILL'): armed in the child before the target program
 *   runs, with the getppid re-check, so that if this process dies, even by SIGKILL, the kernel
 *   signals the child. libuv's spawn has no pre-exec hook, so a small native helper shipped with the
 *   addon (reapkit-exec) does it and then execs the target in its place: no extra process remains.
 *   The signal belongs to the *thread* that spawned: a child spawned from a worker_thread receives it
 *   when that worker ends. It covers the child only: the kernel clears it on fork, so processes the
 *   child starts itself (a shell's commands, npx's server) are not covered. Stop those through the
 *   group (killProcessGracefully) while you live; for the case where you are SIGKILLed, the
 *   `reapkit -- command` wrapper adds a subreaper and a PID namespace.
 * - `cgroup` (Linux, cgroup v2, opt-in): the child in a cgroup of its own, joined by the helper
 *   before its exec, so that every stop also ends what left the group (lib/mechanisms/cgroup/,
 *   stop/cgroup-unit.ts). A join that fails fails the spawn; where no cgroup is ours to make, the
 *   child runs uncontained and spawnedInfo() says why.
 * - `pidNamespace` (Linux, opt-in): the whole tree ends with this process, done by the kernel
 *   (pid-namespace.ts, native/exec_pidns.c).
 * - A handle pinned to the child (a pidfd), opened synchronously before libuv can reap it, so later
 *   signals can never hit a recycled pid: see spawnedHandle().
 *
 * What spawnedInfo() states is true when spawn() returns: through the helper, spawn() returns only
 * once the helper has reported (a close-on-exec pipe: 'R', then EOF at the exec) that the group
 * exists, the signal is armed and the target runs; a stop may begin at any moment after that and
 * still ends every member. exec-report.ts has the design, its bound and its fallbacks.
 *
 * Where the helper is missing (no addon) the group comes from `detached` (setsid) and no death
 * signal is armed; spawnedInfo() says what was applied.
 */
import type { ChildProcess, SpawnOptions as NodeSpawnOptions } from 'node:child_process'
import { typeError } from '../ground/errors'
import { foregroundTerminal, followForeground } from './terminal'
import { type ProcessHandle, openSpawnedChild } from './handle'
import win32SpawnPart from './lazy/spawn-win32'
import containerPart from './lazy/containers'
import { engineOf } from './container/engine-name'
import type { ContainerRecord } from './container/stop'
import { type HelperSpawn, spawnThroughHelper } from './exec-report'
import { refuseNulLikeNode, resolveLikeExecvp, validateConsumedOptionsLikeNode, validateFileLikeNode } from './spawn-args'
import cgroupPart from './lazy/cgroup'
import { loadStopsSoon } from './load-stops'
import pidNamespacePart from './lazy/pid-namespace'
import { heldNodeSpawn, nodeSpawn, spawnReentered } from './node-spawn'
import { nativeBinding, nativeCapabilitiesShared as capabilities, execHelperPath, warnNoNative } from '../ground/native'
import { isSupervisor } from './supervisor-command'
import { register, spawnedInfo } from './spawned'
import { describe, type SignalLike, signalNumber, validateOptions } from '../ground/validate'

export interface SpawnOptions extends NodeSpawnOptions {
  /** Make the child the leader of a new process group. Default true. */
  group?: boolean
  /**
   * When the child's stdin is this process's controlling terminal (inherited) and this process's
   * group holds the terminal's foreground, hand the foreground to the child's
   * group while it runs, as a shell does for a foreground job: it reads the terminal, and Ctrl-C and
   * Ctrl-Z reach it (lib/mechanisms/terminal.ts). Default true; only with `group`.
   */
  foreground?: boolean
  /**
   * Linux: the signal the kernel sends the child when this process (strictly: the spawning thread)
   * dies. Default 'SIGKILL' (none for the `reapkit` supervisor itself, which watches its host and
   * stops its tree on its own); `false` or `null` for none. Ignored where the kernel has no such thing.
   */
  parentDeathSignal?: SignalLike | false | null
  /**
   * A `docker|podman|nerdctl run` (or `container run`) command, without `shell`, is a client of a
   * container the engine runs: reapkit labels the run (`reapkit.run`, `reapkit.owner`) and stops the
   * container through the engine on every stop path (see SpawnedInfo.container). Default true;
   * `false` runs it as a plain command.
   */
  container?: boolean
  /**
   * Linux, cgroup v2: contain the child in a cgroup of its own from its first instruction (the exec
   * helper joins it before it execs the command), so that every stop also ends what left its
   * process group (a setsid helper, a double-forked daemon): lib/mechanisms/cgroup/. Only where a
   * cgroup is ours to make (capabilities().cgroup); elsewhere the child runs uncontained and
   * spawnedInfo(child).cgroupUnavailable says why. Default false.
   */
  cgroup?: boolean
  /**
   * Linux: the child's whole tree (setsid'd and double-forked processes included) ends when this
   * process dies by any means, SIGKILL included: the command runs as PID 2 of a PID namespace of its
   * own, whose init dies with the helper (child.pid), which forwards signals and ends with the
   * command's status. Root or unprivileged user namespaces (capabilities().pidNamespace); refused
   * otherwise, never weaker. What it changes for the program: pid-namespace.ts. Default false.
   */
  pidNamespace?: boolean
}

/** What spawn() applied to a child. */
export interface SpawnedInfo {
  /** The child's process group id when it leads its own group, else null. */
  pgid: number | null
  /** The armed parent-death signal, or null. */
  parentDeathSignal: NodeJS.Signals | null
  /** The pinned handle (closed once the child has exited), or null if the spawn failed. */
  handle: ProcessHandle | null
  /**
   * Windows: the child is reapkit-job.exe running the command in a kill-on-close Job object of its
   * own (spawn-win32.ts), which killProcessGracefully ends as a whole. Absent elsewhere.
   */
  job?: boolean
  /**
   * How what this states was confirmed (POSIX): 'exec' when spawn() returned after the exec helper's
   * report ended: the usual case, the group exists, the death signal is armed and the target was
   * exec'd; or the helper failed (Node's 'error' follows) or died before reporting (then `pgid` and
   * `parentDeathSignal` are null: nothing was confirmed); 'timeout' when the helper did not report within REAPKIT_SPAWN_REPORT_MS (default 5 s):
   * `pgid` and `parentDeathSignal` then say only what it had confirmed by then (null: not yet), and
   * are set when it confirms later; 'none' without the helper (Node's spawn; a group from setsid,
   * which is in place when Node's spawn returns). Windows: 'none'.
   */
  startup: 'exec' | 'timeout' | 'none'
  /**
   * True once the group was seen empty after the child exited. Its id may then belong to someone
   * else's group, so reapkit never lists or signals it again.
   */
  groupGone: boolean
  /**
   * The container run this child is the client of (a recognized `docker|podman|nerdctl run`):
   * how to reach its engine and the label that finds its container. Absent for any other command.
   */
  container?: ContainerRecord
  /** The child's own cgroup (its directory), when spawn() contained it there ({ cgroup: true }). */
  cgroup?: string
  /**
   * True once that cgroup is removed (it emptied after the child), or is no longer the one spawn()
   * made (its path removed and made again by someone else): no stop looks there again.
   */
  readonly cgroupRemoved?: boolean
  /** Why a child spawned with { cgroup: true } is not contained. */
  cgroupUnavailable?: string
  /** True when the child runs in a PID namespace of its own ({ pidNamespace: true }). */
  pidNamespace?: boolean
  /**
   * With pidNamespace: true when the command sees its namespace's own /proc (ps and /proc/<pid>
   * name the namespace's pids); false when the system would not let the init mount one (a locked
   * /proc, in some containers) and the command sees the outer /proc. With startup 'timeout', absent
   * until the init says so (filled in then, as pgid is).
   */
  ownProc?: boolean
}

export { spawnedInfo } from './spawned'

/** The options spawn() consumes itself: Node's spawn never sees them. */
const OWN_OPTIONS = ['group', 'foreground', 'parentDeathSignal', 'container', 'cgroup', 'pidNamespace'] as const

export function spawn(command: string, options?: SpawnOptions): ChildProcess
export function spawn(command: string, args?: readonly string[], options?: SpawnOptions): ChildProcess
export function spawn(
  command: string,
  argsOrOptions?: readonly string[] | SpawnOptions,
  maybeOptions?: SpawnOptions,
): ChildProcess {
  // Called by a child_process.spawn wrapper that nodeSpawn() is calling on behalf of an outer
  // spawn(): that outer call does reapkit's part; this one is Node's spawn (see node-spawn.ts).
  // eslint-disable-next-line prefer-rest-params
  if (spawnReentered()) return heldNodeSpawn(arguments)
  validateFileLikeNode(command)
  loadStopsSoon()
  let args = Array.isArray(argsOrOptions) ? [...(argsOrOptions as readonly string[])] : []
  // Like Node: spawn(cmd, options), spawn(cmd, args, options) and spawn(cmd, null | undefined, options).
  // Like Node: args that are neither an array nor null/undefined are refused, and so are options
  // that are not an object (null included).
  if (!Array.isArray(argsOrOptions) && argsOrOptions != null && typeof argsOrOptions !== 'object') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "args" argument must be an array or an options object. Received ${describe(argsOrOptions)}`)
  }
  // (The argument's name is made only for the error: it cost a string per argument at every spawn.)
  args.forEach((arg, i) => typeof arg === 'string' && arg.includes('\u0000') && refuseNulLikeNode(arg, `args[${i}]`))
  const options: SpawnOptions = validateOptions(
    Array.isArray(argsOrOptions) || argsOrOptions == null ? maybeOptions : (argsOrOptions as SpawnOptions),
  )
  // reapkit's own options, each defaulted where undefined (as destructuring defaults would), then
  // removed from `options`, which is left as Node's: validateOptions's copy of the caller's own
  // properties on a null prototype, so that an option set on Object.prototype (shell, uid,
  // argv0...) is never read below. (A rest destructuring made that copy again, and cost several
  // times these deletes.)
  const explicitSignal = options.parentDeathSignal
  // The native supervisor (the `reapkit` command) watches its host itself and stops the whole tree
  // when the host dies: a kernel SIGKILL on that death would stop it before it could. Its default
  // is therefore no death signal; an explicit option still wins.
  const parentDeathSignal = explicitSignal === undefined ? (isSupervisor(command) ? false : 'SIGKILL') : explicitSignal
  const group = options.group === undefined ? true : options.group
  const handOver = options.foreground === undefined ? true : options.foreground
  const container = options.container === undefined ? true : options.container
  const cgroup = options.cgroup === undefined ? false : options.cgroup
  const pidNamespace = options.pidNamespace === undefined ? false : options.pidNamespace
  for (const key of OWN_OPTIONS) if (key in options) delete options[key]
  const nodeOptions: NodeSpawnOptions = options
  validateConsumedOptionsLikeNode(nodeOptions)
  if (typeof group !== 'boolean') throw typeError('ERR_INVALID_ARG_TYPE', 'The "group" option must be a boolean')
  if (typeof handOver !== 'boolean') throw typeError('ERR_INVALID_ARG_TYPE', 'The "foreground" option must be a boolean')
  if (typeof container !== 'boolean') throw typeError('ERR_INVALID_ARG_TYPE', `The "container" option must be a boolean. Received ${describe(container)}`)
  if (typeof cgroup !== 'boolean') throw typeError('ERR_INVALID_ARG_TYPE', `The "cgroup" option must be a boolean. Received ${describe(cgroup)}`)
  if (typeof pidNamespace !== 'boolean') throw typeError('ERR_INVALID_ARG_TYPE', `The "pidNamespace" option must be a boolean. Received ${describe(pidNamespace)}`)
  // With uid/gid the helper runs as that user, who may not reach the package folder: use Node's own.
  const asOtherUser = nodeOptions.uid !== undefined || nodeOptions.gid !== undefined
  if (pidNamespace) pidNamespacePart().refusePidNamespace({ explicitSignal, asOtherUser })
  const wanted = pidNamespace ? 9 : parentDeathSignal === false || parentDeathSignal === null ? 0 : signalNumber(parentDeathSignal, { allowZero: false })
  const sig = pidNamespace || capabilities().pdeathsig ? wanted : 0 // (the namespace's guarantee rests on it: Linux has it)
  if (!nativeBinding()) {
    if (process.platform === 'linux' && wanted > 0) warnNoNative('spawn() arms no parent-death signal: the child outlives this process if it is SIGKILLed')
    else if (process.platform === 'win32' && group) warnNoNative('spawn() starts the child outside a kill-on-close Job object: what it starts can outlive this process')
  }

  // A container run gets its labels, and its record once the client runs (container/child.ts).
  // The container code loads only for a program named like an engine (the parser decides the rest).
  const run = container && !nodeOptions.shell && engineOf(command) !== null ? containerPart().prepareContainerRun(command, args, nodeOptions) : null
  if (run) args = run.args
  if (pidNamespace && run?.record.engine === 'podman') throw pidNamespacePart().podmanRefused()
  const withContainer = (child: ChildProcess): ChildProcess => {
    if (!run) return child // (most spawns: no look-up of the child's info)
    const info = spawnedInfo(child)
    if (info && child.pid !== undefined) containerPart().attachContainer(child, (info.container = run.record))
    return child
  }

  // Windows: no groups and no death signal, a kill-on-close Job object instead (spawn-win32.ts).
  if (process.platform === 'win32') {
    const inJob = group ? win32SpawnPart().spawnInJob(nodeSpawn, command, args, nodeOptions, wanted > 0) : null
    return withContainer(pinAndRegister(inJob ?? nodeSpawn(command, args, nodeOptions), { pgid: null, parentDeathSignal: null, job: inJob !== null, startup: 'none' }))
  }

  // A shell command is run by the shell, as Node does it (the helper then execs the shell).
  let file = command
  let argv = args
  if (nodeOptions.shell) {
    file = typeof nodeOptions.shell === 'string' ? nodeOptions.shell : '/bin/sh'
    argv = ['-c', [command, ...args].join(' ')]
  }

  const helper = execHelperPath()
  // With pidNamespace, even a command execvp may not find goes through the helper (its failed exec is
  // reported as Node's 'error'): should our look-up and execvp's ever differ, Node's spawn would run
  // it outside any namespace.
  const wantsHelper = helper !== null && (group || sig > 0 || cgroup || pidNamespace) && !asOtherUser
  const path = wantsHelper && !pidNamespace ? resolveLikeExecvp(file, nodeOptions) : null
  const throughHelper = wantsHelper && (pidNamespace || path !== null)
  let uncontained = cgroup ? cgroupPart().whyUncontained(helper !== null, asOtherUser) : null
  if (throughHelper) {
    // Made now, joined by the helper before anything else (fails closed: a failed join fails the spawn).
    const cg = cgroup && uncontained === null ? cgroupPart().makeChildCgroup(cgroupPart().cgroupCapability().path!) : undefined
    // Returns once the helper has formed the group, armed the signal and exec'd the target (or
    // failed, reported as Node's 'error'), within a bound: exec-report.ts.
    const argv0 = nodeOptions.argv0 ?? file
    const terminal = group && handOver ? foregroundTerminal(nodeOptions.stdio) : null
    let started: HelperSpawn | null
    try {
      started = spawnThroughHelper(nodeSpawn, { helper, group, foreground: terminal !== null, sig, cgroup: cg, pidNamespace, file, path: path ?? undefined, argv0, argv, nodeOptions })
    } catch (err) {
      // Node refused (a NUL byte in an argument or the environment...): no child of ours is in it,
      // removed now (or once empty, should a helper have got in before the throw).
      if (cg !== undefined) cgroupPart().removeWhenEmpty(cg)
      throw err
    }
    if (!started && pidNamespace) {
      if (cg !== undefined) cgroupPart().removeWhenEmpty(cg)
      throw pidNamespacePart().noReportPipe(typeof nativeBinding()?.execReportPipe === 'function')
    }
    if (started) {
      // Asked to be contained but not (no cgroup of ours to make one in...): the helper starts it all the same, and its info says why.
      const child = withContainer(registerHelperSpawn(started, cg, pidNamespace, uncontained))
      if (terminal !== null && started.startup !== 'none') followForeground(child, terminal)
      return child
    }
    if (cg !== undefined) {
      cgroupPart().removeWhenEmpty(cg) // never joined: no report possible, Node's own spawn below
      uncontained = 'no report pipe for the exec helper (out of descriptors?): spawned by Node without it'
    }
  } else if (cgroup && uncontained === null) {
    uncontained = 'the command was not found on PATH: left to Node\'s spawn, which reports it'
  }
  // No helper, nothing to arm, a command execvp would not find, or no report possible: Node's own
  // spawn, so its own errors ('error' with ENOENT...) reach the caller unchanged. A group then comes
  // from setsid, which libuv applies before its exec, and its spawn returns after that exec: exact too.
  const child = nodeSpawn(command, args, { ...nodeOptions, detached: nodeOptions.detached || group })
  const notContained = uncontained !== null ? { cgroupUnavailable: uncontained } : {}
  return withContainer(pinAndRegister(child, { pgid: group ? (child.pid ?? null) : null, parentDeathSignal: null, startup: 'none', ...notContained }))
}


/** Pins and registers a child the helper started; a late confirmation (startup 'timeout') updates its info. */
function registerHelperSpawn(started: HelperSpawn, cgroup: string | undefined, pidNamespace: boolean, uncontained: string | null): ChildProcess {
  const child = started.child
  if (cgroup !== undefined) {
    // Removed once the child has exited and the cgroup is empty (a stop removes it sooner).
    const release = (): void => cgroupPart().removeWhenEmpty(cgroup)
    if (child.pid === undefined) release() // failed (a join that failed among the causes)
    else child.once('exit', release)
  }
  if (child.pid === undefined) return child // failed (its 'error' event says why): nothing to pin or register
  // Built by assignment, in the order the fields are listed: no object spread per spawn.
  const applied: Omit<SpawnedInfo, 'handle' | 'groupGone'> = { pgid: started.pgid, parentDeathSignal: started.parentDeathSignal, startup: started.startup }
  if (cgroup !== undefined) applied.cgroup = cgroup
  if (pidNamespace) {
    applied.pidNamespace = true
    if (started.ownProc !== undefined) applied.ownProc = started.ownProc
  }
  if (uncontained !== null) applied.cgroupUnavailable = uncontained
  pinAndRegister(child, applied)
  const info = spawnedInfo(child)!
  if (cgroup !== undefined) Object.defineProperty(info, 'cgroupRemoved', { get: () => cgroupPart().isCgroupRemoved(cgroup), enumerable: true })
  started.onLate?.((late) => {
    if (pidNamespace && late.ownProc !== undefined) info.ownProc = late.ownProc
    if (info.groupGone) return
    info.pgid = late.pgid
    info.parentDeathSignal = late.parentDeathSignal
  })
  return child
}

/** Pins the new child (a handle opened before libuv can reap it) and records what was applied. */
function pinAndRegister(child: ChildProcess, applied: Omit<SpawnedInfo, 'handle' | 'groupGone'>): ChildProcess {
  let handle: ProcessHandle | null = null
  if (child.pid !== undefined) {
    // Synchronously, before the event loop can run libuv's reaping: the pid is still this child.
    try {
      // Without openProcess's checks: a pid Node's spawn just gave, never this process or a thread of it.
      handle = openSpawnedChild(child.pid)
    } catch {
      handle = null // exited and reaped already? then nothing can be signalled by pid anyway
    }
  }
  register(child, applied, handle)
  return child
}
