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
import { type GroupListing, groupListingSoon } from './group'
import { foregroundTerminal, followForeground } from './terminal'
import { type ProcessHandle, openProcess, openSpawnedChild } from './handle'
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

const spawned = new WeakMap<ChildProcess, SpawnedInfo>()

/** What spawn() applied to `child`, or undefined for a child it did not start. */
export function spawnedInfo(child: ChildProcess): SpawnedInfo | undefined {
  return spawned.get(child)
}

// ---- Group trust ----
// A process group id is safe to list and signal only while the group is provably the child's.
// spawn() returns only once the child leads its group (exec-report.ts), so from then on:
// - while the child (its leader) is unreaped, its pid holds the id: listings are trusted, and
//   every member they find is pinned (a pidfd) as a witness;
// - the first scan of the process table taken after the leader is reaped is trusted too, and pins
//   witnesses: a stranger would need a whole pid wrap-around between the reap and that scan, which
//   runs in the same loop turn (the 'exit' hook in register() asks for it). Which scan that is
//   depends on when the scan was taken, not on who asked: a stop's listing that shares that scan is
//   trusted as well (before, a stop that asked first was judged without witnesses, because the
//   'exit' hook that pins them had not run yet, and the group was declared gone with its members
//   still running);
// - after that, a listing is trusted only if a witness is still alive and still in the group after
//   the scan: the group then never emptied, so its id was never free for reuse.
// Without a live witness the group is declared gone for good: we may leave a straggler behind, but
// we never signal a stranger.
const witnesses = new WeakMap<SpawnedInfo, Map<number, ProcessHandle>>()
// Why a group could not be proven either way (EMFILE while listing it or pinning its witnesses):
// then it is neither trusted nor declared gone, and every listing fails with that error, so a stop
// reports itself uncertain instead of "empty".
const unknown = new WeakMap<SpawnedInfo, Error>()
// The number of the first scan taken after the leader was reaped (-1: the exit backstop's table;
// FAILED_SCAN: that scan failed, so no listing is trusted without a witness).
const reapScan = new WeakMap<SpawnedInfo, number>()
const FAILED_SCAN = -2
const isGoneError = (err: unknown): boolean => (err as { code?: unknown })?.code === 'ESRCH'
// ESRCH's number, read at the first exit: node:os is not loaded with reapkit (about 0.1 ms).
let esrch: number | undefined
// eslint-disable-next-line @typescript-eslint/no-require-imports
const esrchNumber = (): number => (esrch ??= (require('node:os') as typeof import('node:os')).constants.errno.ESRCH)

function isReaped(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null
}

function witnessAlive(handle: ProcessHandle, pgid: number): boolean {
  try {
    handle.signal(0) // through the pidfd: fails once the process has exited
    const binding = nativeBinding()
    return binding !== null && binding.getpgid(handle.pid) === pgid
  } catch {
    return false
  }
}

/**
 * Pins members found by a trusted listing as witnesses of the group. Not the leader (`leader`, the
 * child): a witness speaks only after the reap, when the leader is gone (a stop of thousands of
 * children paid a descriptor, a /proc look and a close for each leader's witness).
 */
function pinWitnesses(info: SpawnedInfo, pgid: number, members: number[], leader: number): void {
  let pinned = witnesses.get(info)
  if (!pinned) witnesses.set(info, (pinned = new Map()))
  for (const pid of members) {
    if (pid === leader || pinned.has(pid)) continue
    try {
      // allowSelf: a member of the child's group is never this process (its group is another).
      const handle = openProcess(pid, { allowSelf: true })
      if (witnessAlive(handle, pgid)) pinned.set(pid, handle)
      else handle.close()
    } catch (err) {
      if (!isGoneError(err)) unknown.set(info, err as Error) // not pinned, not gone: a witness we lack
    }
  }
}

function declareGone(info: SpawnedInfo): void {
  info.groupGone = true
  unknown.delete(info)
  const pinned = witnesses.get(info)
  if (pinned === undefined) return // the usual case at the reap: no member was ever pinned
  for (const handle of pinned.values()) handle.close()
  witnesses.delete(info)
}

/**
 * The first look after the reap, step one: kill(-pgid, 0) fails with ESRCH only when no process (not
 * even a zombie) has the id, so the group is empty, and the id was the child's until the reap in this
 * loop turn (as for the first scan above). This one syscall replaces a scan of the whole process
 * table at most exits (~1.2 ms of CPU a spawn: bench/spawn-cost.mjs). A member, a zombie or EPERM
 * (another user's member) goes on to the scan, which pins witnesses.
 */
function groupEmptyAtReap(pgid: number): boolean {
  // The addon's probe returns the errno: the usual answer here is ESRCH, and process.kill's Error
  // for it (its stack captured) cost several times the syscall, at every child's exit.
  const probe = nativeBinding()?.groupProbe
  if (typeof probe === 'function') {
    try {
      return probe(pgid) === esrchNumber()
    } catch {
      return false // (EINVAL for pgid <= 1: never a spawned child's) not proven empty: the scan decides
    }
  }
  try {
    process.kill(-pgid, 0)
    return false
  } catch (err) {
    return isGoneError(err)
  }
}

/** Whether a listing just taken of `info`'s group can be trusted (see above); drops dead witnesses. */
function trustedNow(child: ChildProcess, info: SpawnedInfo, pgid: number, firstAfterReap: boolean): boolean {
  if (!isReaped(child) || firstAfterReap) return true
  const pinned = witnesses.get(info)
  let alive = false
  for (const [pid, handle] of pinned ?? []) {
    if (witnessAlive(handle, pgid)) alive = true
    else {
      handle.close()
      pinned!.delete(pid)
    }
  }
  return alive
}

/**
 * @internal Live members of a spawned (or adopted) child's group, listed only while the group is
 * provably the child's (see "Group trust"); [] once it is gone, and from then on without listing.
 */
export async function spawnedGroupMembers(child: ChildProcess): Promise<number[]> {
  const info = spawned.get(child)
  if (!info || info.pgid === null || info.groupGone) return []
  const pgid = info.pgid
  let listing: GroupListing
  try {
    listing = await groupListingSoon(pgid)
  } catch (err) {
    // The first look after the reap is the one that pins witnesses: without it, trust is unknown,
    // and a later scan is no first look (it may come any time later).
    if (isReaped(child) && !reapScan.has(info)) {
      unknown.set(info, err as Error)
      reapScan.set(info, FAILED_SCAN)
    }
    throw err
  }
  if (info.groupGone) return []
  // Looked at in the callback that took the scan: the child's state is the one the scan saw.
  const reaped = isReaped(child)
  if (reaped && !reapScan.has(info)) reapScan.set(info, listing.scan)
  const members = listing.members
  if (members.length === 0 && reaped) {
    declareGone(info)
    return []
  }
  if (!trustedNow(child, info, pgid, reaped && reapScan.get(info) === listing.scan)) {
    const err = unknown.get(info)
    if (err) throw err // no witness, for want of descriptors: unknown, not gone
    declareGone(info)
    return []
  }
  pinWitnesses(info, pgid, members, child.pid!)
  return members
}

/**
 * @internal The same rule, synchronously, against one listing of the process table (`table`, as
 * the exit backstop takes it once for every child). A table taken after the reap, before any scan
 * was (the 'exit' hook's is still pending in this loop turn), is that first scan after the reap.
 */
export function spawnedGroupMembersSync(child: ChildProcess, table: Map<number, number[]>): number[] {
  const info = spawned.get(child)
  if (!info || info.pgid === null || info.groupGone) return []
  const members = table.get(info.pgid) ?? []
  const first = isReaped(child) && !reapScan.has(info) && !unknown.has(info)
  if (first) reapScan.set(info, -1)
  if (!trustedNow(child, info, info.pgid, first)) {
    if (!unknown.has(info)) declareGone(info) // unknown: not signalled, but not declared gone either
    return []
  }
  return members // not pinned: the backstop signals them at once (each pinned and checked there)
}

/**
 * @internal Gives a child that spawn() did not start the same tracking (pinned handle, group trust),
 * for Supervisor.adopt(). Call it before libuv can reap the child.
 */
export function trackChild(child: ChildProcess): SpawnedInfo | undefined {
  const existing = spawned.get(child)
  if (existing || child.pid === undefined || isReaped(child)) return existing
  let handle: ProcessHandle | null = null
  let pgid: number | null = null
  try {
    handle = openProcess(child.pid)
  } catch (err) {
    if (isGoneError(err)) return undefined
    // Out of descriptors, say: unpinned, but still our unreaped child, whose group is still its own.
  }
  try {
    const binding = nativeBinding()
    if (binding && binding.getpgid(child.pid) === child.pid) pgid = child.pid // needs no descriptor
  } catch (err) {
    if (isGoneError(err)) {
      handle?.close()
      return undefined
    }
  }
  return register(child, { pgid, parentDeathSignal: null, startup: 'none' }, handle)
}

/** `applied` becomes the child's info (every caller passes a fresh object): completed in place, not copied. */
function register(child: ChildProcess, applied: Omit<SpawnedInfo, 'handle' | 'groupGone'>, handle: ProcessHandle | null): SpawnedInfo {
  const info = applied as SpawnedInfo
  info.handle = handle
  info.groupGone = false
  spawned.set(child, info)
  if (child.pid !== undefined) {
    child.once('exit', () => {
      handle?.close()
      if (info.pgid === null || info.groupGone) return
      // Look once, right after libuv reaped it: the group provably empty, or pin what is left.
      if (groupEmptyAtReap(info.pgid)) declareGone(info)
      else spawnedGroupMembers(child).catch(() => {}) // a failure is kept as "unknown" (above)
    })
  }
  return info
}

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
    const info = spawned.get(child)
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
  const info = spawned.get(child)!
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
