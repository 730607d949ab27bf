/**
 * watchParent({ onExit }): fires once when this process's parent dies.
 *
 * - Linux: watches the original parent's pidfd for the exit event that calls `onExit` (a
 *   notification: nothing is armed by default). With `deathSignal`, it also arms PR_SET_PDEATHSIG,
 *   so the kernel delivers that signal even while our event loop is blocked. The parent pid is
 *   recorded first, pinned by a pidfd, and getppid() is re-checked after arming: if the parent was
 *   already gone, it fires at once (the kernel never sends the signal in that case). The re-check
 *   compares with the recorded pid, not with 1: under a subreaper the new parent is not 1.
 * - macOS / BSD: kqueue EVFILT_PROC NOTE_EXIT on the original parent (no death signal exists).
 * - Windows: a wait on a handle to the parent (mechanism 'handle'), opened only if the process
 *   behind the parent's pid was created before this one (a reused pid names a younger process);
 *   Windows never re-parents, so a parent already gone (or never there: a process started from
 *   Linux under Wine has parent pid 0) fires at once.
 * - Elsewhere, or without the addon: a getppid poll (default every 2 s, REAPKIT_PARENT_POLL_INTERVAL_MS),
 *   and `mechanism` says 'poll'.
 *
 * Caveats of the death signal: it is armed on the calling thread (from a worker_thread it lapses
 * when that worker ends); the kernel sends it when the *thread* that spawned us exits, not the
 * parent process; a process started from a Node worker_thread gets it when that worker ends, while
 * the parent lives (onExit, which watches the process, does not fire then). If nothing handles the
 * signal, its default action ends this process at once and onExit never runs: that is the
 * no-orphan guarantee at work. Handle the signal (createKeepalive does) to get both.
 */
import { parentPollMs } from '../ground/config'
import { rangeError, typeError } from '../ground/errors'
import { type ExitWatch, watchNative } from './handle'
import { nativeBinding, nativeCapabilities as capabilities, type NativeProcessHandle, warnNoNative } from '../ground/native'
import { describe, type SignalLike, signalName, signalNumber, validateMs, validateOptions } from '../ground/validate'

export type ParentWatchMechanism = 'pdeathsig' | 'pidfd' | 'kqueue' | 'handle' | 'poll'

export interface ParentExitInfo {
  /** The parent that died (as recorded when watching started). */
  parentPid: number
  /** Our parent now (a subreaper, or 1), read when the death was detected. */
  newParentPid: number
  mechanism: ParentWatchMechanism
}

export interface WatchParentOptions {
  /** Called once, asynchronously, when the parent dies. */
  onExit?: (info: ParentExitInfo) => void
  /**
   * Linux only: a signal the kernel sends this process when its parent dies (PR_SET_PDEATHSIG).
   * Default: none (`onExit` is a notification; `false` or `null` say the same). The trade-off: a
   * death signal reaches a process whose event loop is blocked, where `onExit` cannot run until the
   * loop is free; but a signal nobody handles ends the process by its default action before
   * `onExit` runs (pass `deathSignal: 'SIGTERM'` for exactly that: die with the parent). Handle the
   * signal to get both. Ignored elsewhere.
   */
  deathSignal?: SignalLike | false | null
  /** Poll interval where the kernel cannot notify. Default 2000 ms (REAPKIT_PARENT_POLL_INTERVAL_MS). */
  pollIntervalMs?: number
  /** Keep the event loop alive while watching. Default false. */
  ref?: boolean
  /**
   * The parent this process expects (for example passed down by its spawner). If the parent is
   * already another process when watching starts, the watcher fires at once. Default: the parent
   * at the time of the call.
   */
  expectedParentPid?: number
}

export interface ParentWatcher {
  /** How the death is detected. */
  readonly mechanism: ParentWatchMechanism
  /** The parent being watched (recorded at start). */
  readonly parentPid: number
  /** The armed death signal, or null. */
  readonly deathSignal: NodeJS.Signals | null
  /** True once the parent's death was detected. */
  readonly fired: boolean
  /** Resolves when the parent dies (never rejects; stays pending after close()). */
  readonly exited: Promise<ParentExitInfo>
  /** Stops watching and disarms the death signal (restoring what was armed before). Idempotent. */
  close(): void
  ref(): ParentWatcher
  unref(): ParentWatcher
}

// PR_SET_PDEATHSIG is a setting of the calling thread (it lapses when that thread ends, so arming
// it from a worker_thread lasts only as long as that worker). Within this thread the watchers that
// armed it share it: the newest one's signal is in force, and when it closes the newest remaining
// one's signal is restored, and after the last, what was armed before the first.
const armedBy = new Map<object, number>() // insertion order = arming order
let armedBefore = 0

function arm(owner: object, sig: number): void {
  const native = nativeBinding()!
  const before = armedBy.size === 0 ? native.getParentDeathSignal() : armedBefore
  native.setParentDeathSignal(sig) // may throw: then nothing is recorded
  armedBefore = before
  armedBy.set(owner, sig)
}

function disarm(owner: object): void {
  if (!armedBy.delete(owner)) return
  const newest = [...armedBy.values()].pop()
  nativeBinding()?.setParentDeathSignal(newest ?? armedBefore)
}

function currentPpid(): number {
  const binding = nativeBinding()
  return binding ? binding.getppid() : process.ppid
}

/** The options, checked (before anything is opened or armed). */
interface ParentWatchSpec {
  onExit: ((info: ParentExitInfo) => void) | undefined
  pollMs: number
  /** The death signal's number, 0 for none. */
  deathSig: number
  expected: number | undefined
  ref: boolean
}

function parentWatchSpec(options: WatchParentOptions): ParentWatchSpec {
  options = validateOptions(options)
  const { onExit } = options
  if (onExit !== undefined && typeof onExit !== 'function') {
    throw typeError('ERR_INVALID_ARG_TYPE', 'The "onExit" option must be a function')
  }
  const pollMs = validateMs(options.pollIntervalMs, 'pollIntervalMs') ?? parentPollMs()
  if (pollMs < 1) throw rangeError('ERR_OUT_OF_RANGE', 'The value of "pollIntervalMs" is out of range. It must be >= 1')
  const wantSignal = options.deathSignal === undefined ? false : options.deathSignal
  const deathSig = wantSignal === false || wantSignal === null ? 0 : signalNumber(wantSignal, { allowZero: false })
  const expected = options.expectedParentPid
  if (expected !== undefined && typeof expected !== 'number') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "expectedParentPid" option must be a number. Received ${describe(expected)}`)
  }
  if (expected !== undefined && (!Number.isInteger(expected) || expected < 1 || expected > 2 ** 31 - 1)) {
    throw rangeError('ERR_OUT_OF_RANGE', `The value of "expectedParentPid" is out of range. It must be an integer >= 1. Received ${expected}`)
  }
  return { onExit, pollMs, deathSig, expected, ref: options.ref === true }
}

/** How this platform and build can learn of the parent's death (before the parent is pinned). */
function preferredMechanism(armed: boolean): ParentWatchMechanism {
  const caps = capabilities()
  if (caps.pdeathsig && caps.pidfd) return armed ? 'pdeathsig' : 'pidfd'
  if (caps.kqueue) return 'kqueue'
  return caps.exitWatch === 'handle' ? 'handle' : 'poll'
}

/**
 * Step 1: pins the recorded parent (a pidfd, a kqueue registration, a Windows handle) before
 * anything is armed. `parentGone`: it had already exited; the mechanism falls back to the poll
 * where the parent cannot be pinned.
 */
function pinParent(parentPid: number, mechanism: ParentWatchMechanism, armed: boolean): { handle: NativeProcessHandle | null; parentGone: boolean; mechanism: ParentWatchMechanism } {
  const pinned = (open: () => NativeProcessHandle) => {
    try {
      return { handle: open(), parentGone: false, mechanism }
    } catch (err) {
      const gone = (err as { code?: string }).code === 'ESRCH'
      return { handle: null, parentGone: gone, mechanism: gone ? mechanism : ('poll' as const) }
    }
  }
  const binding = nativeBinding()
  if (binding?.openParent && mechanism === 'handle') {
    // Windows: our own parent, creation time checked natively; an expected pid that is not our
    // parent is caught by the re-check after arming.
    const openParent = binding.openParent
    return parentPid === currentPpid() ? pinned(() => openParent()) : { handle: null, parentGone: false, mechanism }
  }
  if (binding && (mechanism === 'pdeathsig' || mechanism === 'pidfd' || mechanism === 'kqueue') && parentPid > 1) {
    const { ProcessHandle } = binding
    return pinned(() => new ProcessHandle(parentPid))
  }
  // ppid 0 (parent outside our PID namespace) or 1: nothing to pin; the signal alone still works.
  if (mechanism !== 'poll') return { handle: null, parentGone: false, mechanism: armed ? 'pdeathsig' : 'poll' }
  return { handle: null, parentGone: false, mechanism }
}

/** Watches this process's parent and fires `onExit` exactly once when it dies. */
export function watchParent(options: WatchParentOptions = {}): ParentWatcher {
  const { onExit, pollMs, deathSig, expected, ref } = parentWatchSpec(options)
  let reffed = ref
  const parentPid = expected ?? currentPpid()
  const owner = {}
  let fired = false
  let closed = false
  let watch: ExitWatch | null = null
  let timer: NodeJS.Timeout | null = null
  let resolveExited!: (info: ParentExitInfo) => void
  const exited = new Promise<ParentExitInfo>((resolve) => (resolveExited = resolve))

  const armed = capabilities().pdeathsig && deathSig !== 0
  if (!nativeBinding()) {
    warnNoNative(`watchParent() polls the parent every ${pollMs} ms instead of a kernel event${deathSig !== 0 ? ', and arms no death signal' : ''}`)
  }
  const { handle, parentGone, mechanism } = pinParent(parentPid, preferredMechanism(armed), armed)

  const stop = (): void => {
    watch?.cancel()
    watch = null
    if (timer) clearInterval(timer)
    timer = null
  }
  const fire = (): void => {
    if (fired || closed) return
    fired = true
    stop()
    const info: ParentExitInfo = { parentPid, newParentPid: currentPpid(), mechanism }
    resolveExited(info)
    // Asynchronous, so onExit never runs inside watchParent() itself; a throw is an uncaught exception.
    if (onExit) process.nextTick(onExit, info)
  }

  // 2. Register the exit watch (it may fail, e.g. EMFILE: then nothing is armed and nothing leaks),
  // 3. arm the kernel's death signal (Linux), 4. re-check the parent against the record.
  try {
    if (handle && !parentGone) {
      watch = watchNative(handle)
      if (reffed) watch.ref(1)
      void watch.promise.then(fire)
    }
    if (armed) arm(owner, deathSig)
  } catch (err) {
    stop()
    throw err
  } finally {
    handle?.close() // the watcher holds its own descriptor
  }
  if (parentGone || currentPpid() !== parentPid) {
    fire()
  } else if (!watch && (mechanism === 'poll' || (mechanism === 'pdeathsig' && parentPid > 0))) {
    timer = setInterval(() => {
      if (currentPpid() !== parentPid) fire()
    }, pollMs)
    if (!reffed) timer.unref()
  }

  const watcher: ParentWatcher = {
    mechanism,
    parentPid,
    deathSignal: armed ? signalName(deathSig) : null,
    get fired() {
      return fired
    },
    exited,
    close() {
      if (closed) return
      closed = true
      stop()
      disarm(owner)
    },
    ref() {
      if (!reffed) {
        reffed = true
        watch?.ref(1)
        timer?.ref()
      }
      return watcher
    },
    unref() {
      if (reffed) {
        reffed = false
        watch?.ref(-1)
        timer?.unref()
      }
      return watcher
    },
  }
  return watcher
}
