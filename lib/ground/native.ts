/**
 * Loads the addon on first use, not at require (see loadedAddon): a prebuild when present, the
 * local build otherwise, through node-gyp-build. Describes what this platform and build support.
 * If the addon cannot load, reapkit still works where JavaScript alone can (ChildProcess exits, a
 * getppid poll for parent death), every native-only call fails with ENOTSUP carrying the load
 * error as its `cause`, capabilities() lists the fallbacks in use (`missing`) and why
 * (`loadError`), and the first call that runs on a fallback warns once (warnNoNative). The install
 * step never fails for want of an addon (scripts/install-addon.js), so this is what a user without
 * a prebuild or a compiler gets.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, isAbsolute, join } from 'node:path'
import { systemError } from './errors'
import { withSpareDescriptor } from './load-part'
import { explainLoadFailure, missingGuarantees } from './native-missing'

/**
 * The native handle class: a pidfd (Linux), a pid (kqueue platforms, native/process_handle.cc) or
 * an OpenProcess handle (Windows, native/win/process_handle_win.cc).
 */
export interface NativeProcessHandle {
  readonly pid: number
  readonly closed: boolean
  signal(signal: number): void
  close(): void
}

/** Windows only: a kill-on-close Job object without breakaway (native/win/job_win.cc). */
export interface NativeJob {
  readonly closed: boolean
  assign(pid: number): void
  terminate(exitCode?: number): void
  pids(): number[]
  close(): void
}

/** One process as libproc gives it (native/proc_darwin.cc, macOS). startSec -1: not readable (another user's). */
export interface DarwinProcRow {
  pid: number
  ppid: number
  pgid: number
  uid: number
  /** p_stat: 1 SIDL, 2 SRUN, 3 SSLEEP, 4 SSTOP, 5 SZOMB (bsd/sys/proc.h). */
  status: number
  startSec: number
  startUsec: number
  /** The process name (pbi_name, else pbi_comm): not the command line. */
  comm: string
}

/**
 * fd 0 or 1 of a process as libproc gives it (native/proc_darwin.cc, macOS): `id` is the kernel's
 * opaque (hashed) handle of the pipe end or socket; `peerGone` the kernel's word that its peer end
 * is closed for good (see that file for the XNU source it rests on).
 */
export type DarwinFd =
  | { kind: 'closed' | 'other' }
  | { kind: 'pipe'; id: string; read: boolean; write: boolean; peerGone: boolean }
  | { kind: 'socket'; id: string; unixStream: boolean; peerGone: boolean }

/** The addon's exports, as native/*.cc define them. Callers validate arguments first. */
export interface Binding {
  getpgid(pid: number): number
  setpgid(pid: number, pgid: number): void
  kill(pid: number, signal: number): void
  killpg(pgid: number, signal: number): void
  /** kill(-pgid, 0)'s errno, returned rather than thrown: 0, ESRCH (no process has the id) or EPERM (native/group.cc). */
  groupProbe?: (pgid: number) => number
  getppid(): number
  groupMembers(pgid: number): number[]
  groupTable(): Int32Array
  setParentDeathSignal(signal: number): void
  getParentDeathSignal(): number
  setChildSubreaper(on: boolean): void
  isChildSubreaper(): boolean
  reapZombie(pid: number): boolean
  pipePeerAlive(pid: number, fd: number, readSide: boolean): boolean | null
  /** POSIX (native/peer_cred.cc): the user, group and pid (-1 where unknown) at the other end of a connected Unix socket. */
  peerCredentials?: (fd: number) => { uid: number; gid: number; pid: number }
  /**
   * POSIX (native/stdin_watch.cc): watches a dup of fd 0 for its writer's hang-up, on a thread, and
   * calls `onHangup` once with the bytes then left unread (-1: unknown). Returns what fd 0 is; only
   * 'pipe' and 'socket' are watched. EBUSY if a watch runs already.
   */
  stdinWatchStart?: (onHangup: (unread: number) => void) => 'pipe' | 'socket' | 'tty' | 'file' | 'other' | 'closed' | 'socket-unsupported'
  /** Stops the watch (joins its thread); a no-op when none runs. */
  stdinWatchStop?: () => void
  /** The report pipe of spawn()'s exec helper (native/exec_report.cc): [readFd, writeFd], both close-on-exec. */
  execReportPipe(): [number, number]
  /**
   * Reads the helper's report until EOF or `timeoutMs`: `ready` (group formed, death signal armed),
   * `done` (EOF: exec'd or exited; the fd is then closed), the failed `step` and its `errno`.
   */
  execReportWait(fd: number, timeoutMs: number): ExecReport
  /** The same wait, its answer packed in an int32 (native/exec_report.cc has the bits; exec-report.ts unpacks it). */
  execReportWaitCode?: (fd: number, timeoutMs: number) => number
  /** Closes a report descriptor (natively: a worker's fs.closeSync warns for descriptors it did not open). */
  execReportClose(fd: number): void
  /**
   * spawn()'s PATH look-up in one call (native/exec_report.cc): the index of the first entry of
   * `pathList` (split on ':') holding `command` as an executable regular file, -1 for none, -2 where
   * execvp would stop (a stat error it does not skip). spawn-args.ts's resolveLikeExecvp has the rule.
   */
  execvpSearch?: (pathList: string, cwd: string, command: string) => number
  /** POSIX (native/terminal.cc): the foreground process group of the terminal on `fd` (ENOTTY if it is not our controlling terminal). */
  tcgetpgrp?: (fd: number) => number
  /** POSIX: makes `pgid` the terminal's foreground group, with SIGTTOU blocked for the call (so a background caller is not stopped). */
  tcsetpgrp?: (fd: number, pgid: number) => void
  /** POSIX: whether our own child `pid` is stopped (waitid WSTOPPED|WNOHANG|WNOWAIT: reaps nothing). */
  childStopped?: (pid: number) => boolean
  /** POSIX: the signal that stopped our own child `pid` (SIGTTIN...), 0 when it is not stopped (the same waitid). */
  childStopSignal?: (pid: number) => number
  /** macOS only (native/proc_darwin.cc; absent elsewhere): every process, through libproc. */
  darwinProcesses?: () => DarwinProcRow[]
  /** macOS only: one process with its session and resident memory; null when there is none. */
  darwinProcess?: (pid: number) => (DarwinProcRow & { sid: number; rssBytes: number }) | null
  /** macOS only: fds 0 and 1 of `pid`. Throws ESRCH (gone) or EPERM (another user's). */
  darwinStdio?: (pid: number) => [DarwinFd, DarwinFd]
  /** Windows only (native/win/job_win.cc): asks reapkit-job.exe `pid` to end its job; false if it cannot be asked. */
  jobStop?: (pid: number) => boolean
  ProcessHandle: new (pid: number) => NativeProcessHandle
  /** `dispatch` gets every exit of one wake-up at once: (watch id, code, signal) triples, -1 = unknown. */
  watcherStart(dispatch: (batch: Float64Array) => void): void
  /** A handle, or a bare pid (opened here; ESRCH if gone). Watches of one process share a registration. */
  watch(target: NativeProcessHandle | number): number
  unwatch(id: number): void
  watcherRef(ref: boolean): void
  watcherStats(): { running: boolean; watches: number; registrations: number; reffed: boolean }
  capabilities: { pidfd: boolean; prctl: boolean; exitWatch: 'pidfd' | 'kqueue' | 'handle' | 'none'; job?: boolean }
  /** Windows only (native/win): Job objects and the parent opened with its creation time checked. */
  Job?: new () => NativeJob
  openParent?: () => NativeProcessHandle
}

/** What native/exec_report.cc read from spawn()'s exec helper. */
export interface ExecReport {
  ready: boolean
  done: boolean
  step: 'cgroup' | 'setpgid' | 'prctl' | 'unshare' | 'fork' | 'exec' | null
  /** The helper's errno for `step` (positive), else 0. */
  errno: number
  /** With --pid-namespace: whether the init mounted the namespace's own /proc (absent: not said). */
  ownProc?: boolean
}

/** What this platform and build support. */
export interface Capabilities {
  /** The native addon loaded. */
  native: boolean
  /** pidfds work here at run time (Linux >= 5.3, not blocked by seccomp). */
  pidfd: boolean
  /** PR_SET_PDEATHSIG is available (Linux). */
  pdeathsig: boolean
  /** PR_SET_CHILD_SUBREAPER is available (Linux). */
  subreaper: boolean
  /** The kqueue EVFILT_PROC exit watcher is built in (macOS, the BSDs). */
  kqueue: boolean
  /**
   * How watchExit sees a pid exit: by kernel event ('pidfd', 'kqueue'; 'handle' on Windows: a wait
   * on an OpenProcess handle) or, where none exists, 'poll'.
   */
  exitWatch: 'pidfd' | 'kqueue' | 'handle' | 'poll'
  /**
   * How watchParent() detects parent death by default (its `mechanism` when called without
   * `deathSignal`): on Linux the parent's pidfd, since the kernel death signal is opt-in
   * (`deathSignal` arms it, and `mechanism` then says 'pdeathsig'; `pdeathsig: true` says it can).
   */
  parentWatch: 'pidfd' | 'kqueue' | 'handle' | 'poll'
  /** Windows: kill-on-close Job objects (createJob()). False elsewhere. */
  job: boolean
  /**
   * The helper spawn() starts children through is present: reapkit-exec (a new group and the death
   * signal, then exec) on POSIX, reapkit-job.exe (a kill-on-close Job object) on Windows.
   */
  execHelper: boolean
  /** The native supervisor of the `reapkit` command is present (supervisorPath()). */
  supervisor: boolean
  /**
   * The guarantees this platform has that this process runs without, each as `name: what happens
   * instead` (e.g. `parentDeathSignal: spawn() arms none, ...`); [] when none is missing. Without
   * the addon, `loadError` says why.
   */
  missing: string[]
  /** Why the addon did not load, when it did not: the loader's error, what the package carries, what the install step did, how to get it. */
  loadError?: string
}

let root: string | undefined

/** The package's folder: found once (it is where this file is; spawn() asks at every call, via launcherPath()). */
function packageRoot(): string {
  return (root ??= findPackageRoot())
}

function findPackageRoot(): string {
  // lib/ground/ under vitest, dist/cjs/ when built: walk up to the folder that holds binding.gyp.
  let dir = __dirname
  for (let i = 0; i < 5; i++) {
    if (existsSync(join(dir, 'binding.gyp')) && existsSync(join(dir, 'package.json'))) {
      try {
        if (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name === 'reapkit') return dir
      } catch {
        // not ours; keep walking
      }
    }
    dir = dirname(dir)
  }
  return join(__dirname, '..', '..')
}

/** node-gyp-build's own search: tagged prebuilds (libc, arch), its environment overrides. */
function gypBuildFile(root: string): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('node-gyp-build') as { path(dir: string): string }).path(root)
}

/**
 * The usual two places, checked directly (node-gyp-build's full search costs a few ms at require
 * time), unless one of node-gyp-build's overrides is set: then its search decides.
 */
function fastAddonFile(root: string): string | null {
  const env = process.env
  if (env.REAPKIT_PREBUILD || env.LIBC || env.npm_config_arch || env.npm_config_platform) return null
  const candidates = env.PREBUILDS_ONLY
    ? []
    : [join(root, 'build', 'Release', 'reapkit.node'), join(root, 'build', 'Debug', 'reapkit.node')]
  const dir = join(root, 'prebuilds', `${process.platform}-${process.arch}`)
  // On musl (Alpine) its own build first: the glibc one may even load there (gcompat), as the wrong one.
  if (onMusl()) candidates.push(join(dir, 'reapkit.musl.node'))
  candidates.push(join(dir, 'reapkit.node'))
  return candidates.find((file) => existsSync(file)) ?? null
}

/** Whether this Linux runs on musl: its dynamic loader is there (one stat; node-gyp-build asks /etc/alpine-release). */
function onMusl(): boolean {
  if (process.platform !== 'linux') return false
  const arch = process.arch === 'x64' ? 'x86_64' : process.arch === 'arm64' ? 'aarch64' : process.arch
  return existsSync(`/lib/ld-musl-${arch}.so.1`)
}

function loadAddon(root: string): { binding: Binding; file: string } {
  // An explicit build, for testing one (the sanitizer run: scripts/sanitize/run.sh): its helpers
  // are taken from beside it too. Absolute path only, so a relative one never means "wherever the
  // process happens to be".
  const explicit = process.env.REAPKIT_ADDON
  if (explicit) {
    if (!isAbsolute(explicit)) throw new Error(`REAPKIT_ADDON must be an absolute path to a .node file, got ${explicit}`)
    return { binding: require(explicit) as Binding, file: explicit }
  }
  const fast = fastAddonFile(root)
  if (fast) {
    try {
      return { binding: require(fast) as Binding, file: fast }
    } catch (err) {
      // e.g. a glibc prebuild on musl: let node-gyp-build find the tagged one, or report this error
      try {
        const file = gypBuildFile(root)
        if (file !== fast) return { binding: require(file) as Binding, file }
      } catch {
        // fall through to the first error, the more telling one
      }
      throw err
    }
  }
  const file = gypBuildFile(root)
  return { binding: require(file) as Binding, file }
}

/** What loading the addon came to: the addon and its file, or why there is none. */
interface AddonState {
  binding: Binding | null
  file: string | null
  dir: string | null
  error: Error | null
  /** One sentence on why there is no addon, for the REAPKIT_NO_NATIVE warning. */
  summary: string
}

let addon: AddonState | undefined

/**
 * The addon, loaded on the first call that needs it (or learns that it is missing): not at
 * require('reapkit'), where opening the package's package.json and dlopen cost about 0.7 ms of a
 * process that may never call into it (bench/require.mjs). Nothing calls the addon at require time
 * (no watcher, no parent watch starts there), so when it loads changes nothing it does. Loaded once
 * per copy of this module, a failure included: capabilities() never changes its answer.
 *
 * The first call may be a stop made when the process has run out of file descriptors, and dlopen
 * needs one (as reading package.json does): a load that failed is tried once more with the spare
 * descriptor load-part.ts keeps for the parts given back (out of descriptors shows itself as EMFILE
 * from fs, but as dlerror's text from dlopen, so any failure is retried: the second attempt decides).
 */
function loadedAddon(): AddonState {
  if (addon) return addon
  try {
    const found = withSpareDescriptor(() => loadAddon(packageRoot()))
    addon = { binding: found.binding, file: found.file, dir: dirname(found.file), error: null, summary: '' }
  } catch (err) {
    const cause = err instanceof Error ? err : new Error(String(err))
    // What the package carries, what its install step did (or that it never ran: --ignore-scripts,
    // pnpm 10, Bun, an npm allowScripts denial) and how to get the addon: native-missing.ts.
    const story = explainLoadFailure(packageRoot(), cause)
    addon = { binding: null, file: null, dir: null, error: new Error(story.message, { cause }), summary: story.summary }
  }
  return addon
}

/** The addon (loaded by this call if it is the first), or null when it cannot load (see capabilities().loadError). */
export function nativeBinding(): Binding | null {
  return (addon ?? loadedAddon()).binding
}

/**
 * The addon file this copy loaded (loading it if not yet), or null. Two copies of reapkit's
 * JavaScript that load the same file share its per-environment state (the exit watcher): handle.ts
 * keys what it shares by it.
 */
export function nativeAddonFile(): string | null {
  return loadedAddon().file
}

/** The addon, or throws ENOTSUP for `syscall` when it could not load. */
export function requireBinding(syscall: string): Binding {
  const { binding, error } = loadedAddon()
  if (binding) return binding
  throw systemError('ENOTSUP', syscall, 'the reapkit native addon is not loaded', error ?? undefined)
}

/**
 * The addon's POSIX parts (process groups, prctl, waitid): on Windows they do not exist, and the
 * call throws ENOTSUP saying what Windows has instead, never a silent no-op.
 */
export function requirePosixBinding(syscall: string, what: string): Binding {
  if (process.platform === 'win32') {
    throw systemError(
      'ENOTSUP',
      syscall,
      `${what} does not exist on Windows; reapkit uses kill-on-close Job objects there (capabilities().job)`,
    )
  }
  return requireBinding(syscall)
}

const executables = new Map<string, string | null>()

/** An executable shipped beside the addon: the prebuild's folder, or `helper/` beside a local build. */
function shippedExecutable(name: string): string | null {
  const known = executables.get(name)
  if (known !== undefined) return known
  let found: string | null = null
  const { dir } = loadedAddon()
  if (dir) {
    // helper/ first: a local build's own place. node-gyp's link of a helper also leaves a copy beside
    // the addon, which a later build of it by another route (reapkit-exec's musl action) does not
    // replace: that copy would be stale. A prebuild folder has no helper/.
    for (const candidate of [join(dir, 'helper', name), join(dir, name)]) {
      if (existsSync(candidate)) {
        found = candidate
        break
      }
    }
  }
  executables.set(name, found)
  return found
}

/**
 * The exec helper (native/exec_helper.c) shipped beside the addon: `prebuilds/<platform>-<arch>/`
 * for a prebuild, `build/Release/helper/` for a local build. null where it is missing.
 */
export function execHelperPath(): string | null {
  return shippedExecutable('reapkit-exec')
}

/**
 * Windows: reapkit-job.exe (native/win/job_launcher.c), through which spawn() starts every child in
 * a kill-on-close Job object. null elsewhere, or where it is missing.
 */
export function jobLauncherPath(): string | null {
  return process.platform === 'win32' ? shippedExecutable('reapkit-job.exe') : null
}

/** The package's `reapkit` launcher (bin/reapkit), for recognising it; null where it is missing. */
export function launcherPath(): string | null {
  try {
    const file = join(packageRoot(), 'bin', 'reapkit')
    return existsSync(file) ? file : null
  } catch {
    return null
  }
}

/**
 * The library's own lookup of the native supervisor (spawn recognises it by path): null where this
 * build has none. Users get supervisorCommand() under the name `supervisorPath` (index.ts).
 */
export function supervisorPath(): string | null {
  // Windows: reapkit-job.exe is that supervisor (a kill-on-close job; `--host PID|ancestors`).
  return process.platform === 'win32' ? jobLauncherPath() : shippedExecutable('reapkit-supervise')
}

/**
 * The native supervisor behind the `reapkit` command (native/supervise/), for hosts that start
 * servers themselves: `spawn(supervisorPath(), ['--', 'uvx', 'some-server'])`. Exported as
 * `supervisorPath`. Throws ENOTSUP where this build has none; `capabilities().supervisor` says
 * whether it has one, without a throw.
 */
export function supervisorCommand(): string {
  const file = supervisorPath()
  if (file !== null) return file
  const name = process.platform === 'win32' ? 'reapkit-job.exe' : 'reapkit-supervise'
  const { error, dir } = loadedAddon()
  const why = error ? `the addon did not load (${error.message})` : `${name} is missing beside the addon in ${dir}`
  throw systemError('ENOTSUP', 'supervisorPath', `this build of reapkit has no native supervisor: ${why}`)
}

let caps: Capabilities | undefined

/**
 * What this platform and build support: `{ native, pidfd, pdeathsig, subreaper, kqueue, parentWatch, ... }`.
 * The public capabilities() (mechanisms/cgroup/capabilities.ts) adds `cgroup`; a name of its own
 * here, since both sit in one bundle and a clash would rename the public one's `.name`.
 */
export function nativeCapabilities(): Capabilities {
  if (caps) return { ...caps, missing: [...caps.missing] } // a copy the caller may change, as the first one
  const { binding, error } = loadedAddon()
  const native = binding?.capabilities
  const pidfd = native?.pidfd === true
  const kqueue = native?.exitWatch === 'kqueue'
  const prctl = native?.prctl === true
  const handle = native?.exitWatch === 'handle' // Windows
  caps = {
    native: binding !== null,
    pidfd,
    pdeathsig: prctl,
    subreaper: prctl,
    kqueue,
    exitWatch: pidfd ? 'pidfd' : kqueue ? 'kqueue' : handle ? 'handle' : 'poll',
    parentWatch: prctl && pidfd ? 'pidfd' : kqueue ? 'kqueue' : handle ? 'handle' : 'poll',
    job: native?.job === true,
    execHelper: (process.platform === 'win32' ? jobLauncherPath() : execHelperPath()) !== null,
    supervisor: supervisorPath() !== null,
    missing: [],
    ...(error ? { loadError: error.message } : {}),
  }
  caps.missing = missingGuarantees(caps)
  return { ...caps, missing: [...caps.missing] }
}

/**
 * @internal nativeCapabilities() without its copy, for reapkit's own reads at every spawn (spawn(),
 * openProcess(), each ProcessHandle): read only, never handed to a caller.
 */
export function nativeCapabilitiesShared(): Readonly<Capabilities> {
  if (!caps) nativeCapabilities()
  return caps!
}

// Once per thread, across every copy of reapkit's JavaScript that the program loaded (the CJS and
// ESM entries, two versions in one dependency tree): a registry symbol on the global object.
const WARNED = Symbol.for('reapkit.noNativeWarning')

/**
 * Where the addon did not load, the first call that needs one of its guarantees says so, once, as
 * a process warning with code REAPKIT_NO_NATIVE: `lost` says what that call does without it. The
 * fallbacks keep working; a silent downgrade would hide that a child may outlive its parent.
 * A no-op when the addon loaded.
 */
export function warnNoNative(lost: string): void {
  const { binding, summary } = loadedAddon()
  if (binding) return
  const g = globalThis as { [WARNED]?: boolean }
  if (g[WARNED]) return
  g[WARNED] = true
  process.emitWarning(`reapkit's native addon is not loaded, so ${lost}. ${summary}`, {
    code: 'REAPKIT_NO_NATIVE',
    detail:
      'capabilities().missing lists every fallback in use, capabilities().loadError says why and how to get the addon. ' +
      'Shown once per process; silence it with node --disable-warning=REAPKIT_NO_NATIVE.',
  })
}
