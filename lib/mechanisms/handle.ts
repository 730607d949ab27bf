/**
 * openProcess(pid): a handle pinned to one process. On Linux it holds a pidfd from the moment it is
 * opened and signals through pidfd_send_signal, so it can never signal a recycled pid. `exited`
 * resolves by kernel event (pidfd in epoll; kqueue NOTE_EXIT on macOS/BSD), from one background
 * thread shared by every watch in this thread's environment.
 *
 * Without pidfd or kqueue (seccomp, old kernels, no addon) the handle holds only the pid; it
 * re-checks that the process lives before each signal and learns of its exit by a poll.
 * capabilities().exitWatch says which applies.
 */
import { readFileSync } from 'node:fs'
import { envMs, EXIT_POLL_MS_DEFAULT } from '../ground/config'
import { ReapkitError, rangeError, systemError } from '../ground/errors'
import { nativeAddonFile, nativeBinding, nativeCapabilitiesShared as capabilities, type NativeProcessHandle, warnNoNative } from '../ground/native'
import { isSelf, type SignalLike, signalName, signalNumber, validatePid, validateOptions } from '../ground/validate'

/** What is known about a process's end. `code`/`signal` are null where the kernel does not say. */
export interface ExitInfo {
  pid: number
  /** Exit code, when the process exited normally and its status was observable (our child). */
  code: number | null
  /** Terminating signal, when it was killed and its status was observable (our child). */
  signal: NodeJS.Signals | null
}

// ---- The exit-watch registry: one native watcher per environment, refcounted keep-alive. ----

interface Watch {
  resolve(code: number | null, signal: number | null): void
  refs: number
}

/**
 * The registry's state belongs to the addon, not to this copy of the module. The native watcher is
 * one per environment and per addon file, and takes one dispatcher; a second copy of this module in
 * the same process (a test runner that resets its module registry between files, a bundle beside
 * the package) would otherwise try to start it again (EBUSY) or never hear of its exits. So every
 * copy that loaded the same addon file shares one registry, found on this realm's global object
 * under a key that names the file (another reapkit install, another file, another registry).
 */
interface Registry {
  watches: Map<number, Watch>
  started: boolean
  reffed: number
  /**
   * Batches not yet fully settled, oldest first: a batch that arrives while an earlier one is split
   * waits behind it, so exits settle in the order the kernel reported them.
   */
  queue: { batch: Float64Array; at: number }[]
  draining: boolean
}

function sharedRegistry(): Registry {
  const key = Symbol.for(`reapkit.exitWatchRegistry.v1:${nativeAddonFile() ?? ''}`)
  const global = globalThis as unknown as Record<symbol, Registry | undefined>
  const found = global[key]
  if (found) return found
  const fresh: Registry = { watches: new Map(), started: false, reffed: 0, queue: [], draining: false }
  Object.defineProperty(globalThis, key, { value: fresh, enumerable: false })
  return fresh
}

let registryOfThisCopy: Registry | undefined

/** The shared registry, found (or made) on first use: its key names the addon file, which loads then. */
function registry(): Registry {
  return (registryOfThisCopy ??= sharedRegistry())
}

// Exits settled per macrotask: a larger batch is split across setImmediate turns so that timers
// and I/O run between the parts (10,000 exits at once must not hold the loop for their whole run).
const DISPATCH_CHUNK = 256

/**
 * Called by the native watcher once per wake-up with every exit it has: (watch id, code, signal)
 * triples, -1 for unknown. O(1) per exit.
 */
function dispatch(batch: Float64Array): void {
  const shared = registry()
  shared.queue.push({ batch, at: 0 })
  if (!shared.draining) drain()
}

function drain(): void {
  const shared = registry()
  const { queue } = shared
  shared.draining = false
  let budget = DISPATCH_CHUNK
  while (queue.length > 0 && budget > 0) {
    const head = queue[0]!
    const { batch } = head
    const end = Math.min(batch.length, head.at + budget * 3)
    for (let i = head.at; i < end; i += 3) settle(batch[i]!, batch[i + 1]!, batch[i + 2]!)
    budget -= (end - head.at) / 3
    head.at = end
    if (end >= batch.length) queue.shift()
  }
  if (queue.length > 0) {
    // The watches of the rest are still in `watches` (and hold their refs), so the loop stays
    // alive for them exactly as before their exit arrived.
    shared.draining = true
    setImmediate(drain)
  }
}

function settle(id: number, code: number, signal: number): void {
  const { watches } = registry()
  const watch = watches.get(id)
  if (!watch) return
  watches.delete(id)
  if (watch.refs > 0) adjustRef(-1)
  try {
    watch.resolve(code < 0 ? null : code, signal < 0 ? null : signal)
  } catch {
    // resolve() only settles promises; nothing here may throw into the native dispatcher
  }
}

function adjustRef(delta: number): void {
  const shared = registry()
  const before = shared.reffed > 0
  shared.reffed += delta
  const after = shared.reffed > 0
  if (before !== after) nativeBinding()?.watcherRef(after)
}

/** A registered kernel exit watch; `cancel()` removes it, `ref(+1/-1)` keeps the loop alive. */
export interface ExitWatch {
  readonly promise: Promise<{ code: number | null; signal: number | null }>
  cancel(): void
  ref(delta: 1 | -1): void
}

/** A native watch without a promise of its own: `onExit` is called once, from the dispatcher. */
export interface NativeWatch {
  cancel(): void
  ref(delta: 1 | -1): void
}

/**
 * Registers `target` (a handle, or a bare pid) with the native exit watcher (pidfd or kqueue);
 * `onExit` runs when it exits. Watches of one running process share one kernel registration (one
 * descriptor, not one each). A bare pid that no longer exists throws ESRCH; a handle whose
 * process kqueue reports gone calls `onExit` at once.
 */
export function registerExit(target: NativeProcessHandle | number, onExit: Watch['resolve']): NativeWatch {
  const native = nativeBinding()!
  const shared = registry()
  const { watches } = shared
  if (!shared.started) {
    native.watcherStart(dispatch)
    shared.started = true
  }
  let id: number
  try {
    id = native.watch(target)
  } catch (err) {
    // kqueue reports a process that is already gone as ESRCH: that is an exit, not an error.
    if ((err as { code?: string }).code !== 'ESRCH' || typeof target === 'number') throw err
    onExit(null, null)
    return { cancel() {}, ref() {} }
  }
  const watch: Watch = { resolve: onExit, refs: 0 }
  watches.set(id, watch)
  return {
    cancel() {
      if (!watches.delete(id)) return
      native.unwatch(id)
      if (watch.refs > 0) adjustRef(-1)
    },
    ref(delta) {
      if (!watches.has(id)) return
      const was = watch.refs > 0
      watch.refs = Math.max(0, watch.refs + delta)
      if (was !== watch.refs > 0) adjustRef(watch.refs > 0 ? 1 : -1)
    },
  }
}

/** registerExit() with a promise. */
export function watchNative(target: NativeProcessHandle | number): ExitWatch {
  let resolve!: Watch['resolve']
  const promise = new Promise<{ code: number | null; signal: number | null }>((res) => {
    resolve = (code, signal) => res({ code, signal })
  })
  const watch = registerExit(target, resolve)
  return { promise, cancel: watch.cancel, ref: watch.ref }
}

/** Whether `pid` still runs, for the poll fallback only: ESRCH or a zombie count as gone. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false
    // EPERM: it exists, it is just not ours
  }
  if (process.platform === 'linux') {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
      if (state === 'Z' || state === 'X') return false
    } catch {
      return false // gone between the two looks
    }
  }
  return true
}

/** The poll fallback of an exit watch, where the kernel cannot notify. */
export function watchByPoll(pid: number): ExitWatch {
  const interval = envMs('REAPKIT_EXIT_POLL_MS', EXIT_POLL_MS_DEFAULT, 5, 60_000)
  let resolve!: (v: { code: null; signal: null }) => void
  const promise = new Promise<{ code: number | null; signal: number | null }>((res) => (resolve = res))
  let refs = 0
  const timer = setInterval(() => {
    if (isRunning(pid)) return
    clearInterval(timer)
    resolve({ code: null, signal: null })
  }, interval)
  timer.unref()
  if (!isRunning(pid)) {
    clearInterval(timer)
    resolve({ code: null, signal: null })
  }
  return {
    promise,
    cancel: () => clearInterval(timer),
    ref(delta) {
      refs = Math.max(0, refs + delta)
      if (refs > 0) timer.ref()
      else timer.unref()
    },
  }
}

/** Internal: statistics of this environment's native watcher (for tests and diagnostics). */
export function exitWatcherStats(): { running: boolean; watches: number; registrations: number; reffed: boolean } {
  const binding = nativeBinding()
  return binding ? binding.watcherStats() : { running: false, watches: 0, registrations: 0, reffed: false }
}

// ---- ProcessHandle ----

const constructing = Symbol('ProcessHandle')

/** A handle pinned to one process; see openProcess(). */
export class ProcessHandle {
  /** The process id this handle was opened for. */
  readonly pid: number
  #native: NativeProcessHandle | null
  #watch: ExitWatch | null = null
  #exited: Promise<ExitInfo> | null = null
  #rejectExited: ((err: Error) => void) | null = null
  #exitInfo: ExitInfo | null = null
  #userRef = false // ref() / unref()
  #holds = 0 // internal holds, one per pending watchExit() on this handle
  #closed = false

  /** @internal use openProcess() */
  constructor(token: symbol, pid: number, native: NativeProcessHandle | null) {
    if (token !== constructing) throw new TypeError('Use openProcess(pid) to create a ProcessHandle')
    this.pid = pid
    this.#native = native
    // Without pidfds the handle learns of the exit only from its watch; start it now, so that
    // signal() can refuse a process it has seen go.
    // (A Windows handle pins the process as a pidfd does: its signal() refuses an exited one itself.)
    const caps = capabilities()
    if (!caps.pidfd && caps.exitWatch !== 'handle') void this.exited.catch(() => {})
  }

  /** True once close() has been called. */
  get closed(): boolean {
    return this.#closed
  }

  /**
   * Resolves when the process exits, by kernel event. Rejects (code 'ERR_REAPKIT_HANDLE_CLOSED') if
   * the handle is closed first; that rejection is pre-handled, so an unawaited `exited` never
   * becomes an unhandled rejection.
   */
  get exited(): Promise<ExitInfo> {
    if (this.#exited) return this.#exited
    if (this.#closed) {
      this.#exited = Promise.reject(closedError(this.pid))
      this.#exited.catch(() => {})
      return this.#exited
    }
    let watch: ExitWatch
    try {
      watch = this.#native && capabilities().exitWatch !== 'poll' ? watchNative(this.#native) : watchByPoll(this.pid)
    } catch (err) {
      // e.g. EMFILE: a getter rejects rather than throws, pre-handled like every `exited`. Not
      // cached: a resource error is not the process's fate, and a later look may succeed.
      const failed = Promise.reject(err)
      failed.catch(() => {})
      return failed
    }
    this.#watch = watch
    if (this.#keepsAlive()) watch.ref(1)
    this.#exited = new Promise<ExitInfo>((resolve, reject) => {
      this.#rejectExited = reject
      void watch.promise.then(({ code, signal }) => {
        this.#exitInfo = { pid: this.pid, code, signal: signal === null ? null : signalName(signal) }
        this.#watch = null
        resolve(this.#exitInfo)
      })
    })
    this.#exited.catch(() => {})
    return this.#exited
  }

  /**
   * Sends `signal` (default SIGTERM) to exactly this process. Throws ESRCH once it has exited
   * (zombie or reaped): never a signal to a recycled pid. Throws EBADF after close().
   */
  signal(signal: SignalLike = 'SIGTERM'): void {
    const sig = signalNumber(signal)
    if (this.#closed) throw systemError('EBADF', 'pidfd_send_signal', 'the handle is closed')
    if (this.#exitInfo) throw systemError('ESRCH', 'pidfd_send_signal', 'the process has exited')
    if (this.#native) {
      this.#native.signal(sig)
      return
    }
    // pid-only fallback: not pinned. Re-check right before the syscall to narrow the window.
    if (!isRunning(this.pid)) throw systemError('ESRCH', 'kill', 'the process has exited')
    process.kill(this.pid, sig)
  }

  #keepsAlive(): boolean {
    return this.#userRef || this.#holds > 0
  }

  #setRef(change: () => void): this {
    const before = this.#keepsAlive()
    change()
    const after = this.#keepsAlive()
    if (before !== after) this.#watch?.ref(after ? 1 : -1)
    return this
  }

  /** Keeps the event loop alive while `exited` is pending (default: it does not). */
  ref(): this {
    return this.#setRef(() => (this.#userRef = true))
  }

  /** Undoes ref(). Waits in progress through watchExit() keep their own hold. */
  unref(): this {
    return this.#setRef(() => (this.#userRef = false))
  }

  /** @internal watchExit() holds the loop open while it waits on this handle, apart from ref(). */
  static hold(handle: ProcessHandle, delta: 1 | -1): void {
    handle.#setRef(() => (handle.#holds = Math.max(0, handle.#holds + delta)))
  }

  /** Releases the pidfd and any exit watch. Idempotent. */
  close(): void {
    if (this.#closed) return
    this.#closed = true
    this.#watch?.cancel()
    this.#watch = null
    this.#native?.close()
    if (!this.#exitInfo) this.#rejectExited?.(closedError(this.pid))
  }

  /** `using handle = openProcess(pid)` closes it at the end of the block. */
  [Symbol.dispose](): void {
    this.close()
  }
}

function closedError(pid: number): ReapkitError {
  return new ReapkitError('ERR_REAPKIT_HANDLE_CLOSED', `The handle for pid ${pid} was closed before the process exited`)
}

export interface OpenProcessOptions {
  /** Permit a handle on this process itself. Default false. */
  allowSelf?: boolean
}

/**
 * Opens a handle pinned to process `pid`. Throws a system error with code 'ESRCH' if no such
 * process exists (it already exited and was reaped, or never existed).
 */
export function openProcess(pid: number, options: OpenProcessOptions = {}): ProcessHandle {
  options = validateOptions(options)
  const p = validatePid(pid)
  // allowSelf first: the look in /proc costs ~4 µs, paid by every witness a stop pins (spawn.ts).
  if (options.allowSelf !== true && isSelf(p)) {
    throw rangeError('ERR_REAPKIT_SELF', `Refusing a handle on this process itself (pid ${p}); pass { allowSelf: true }`)
  }
  return openChecked(p)
}

/**
 * @internal openProcess() for a pid spawn() has just been given by Node's spawn: a valid pid, our
 * unreaped child, never this process, so without openProcess's checks (its options copied, the
 * pid validated), which every spawn paid.
 */
export function openSpawnedChild(pid: number): ProcessHandle {
  return openChecked(pid)
}

function openChecked(p: number): ProcessHandle {
  const caps = capabilities()
  const binding = nativeBinding()
  if (binding && (caps.pidfd || caps.kqueue || caps.exitWatch === 'handle')) {
    return new ProcessHandle(constructing, p, new binding.ProcessHandle(p))
  }
  if (!isRunning(p)) throw systemError('ESRCH', 'kill', 'no such process')
  warnNoNative('process handles are not pinned: a handle polls for the exit and signals by pid, which may have been recycled by then')
  return new ProcessHandle(constructing, p, null)
}
