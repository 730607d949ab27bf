/**
 * watchStdinHangup(onHangup): tells when the writer side of this process's stdin is gone, without
 * reading a byte of it (native/stdin_watch.cc: a thread blocked in poll() on a dup of fd 0). For a
 * server that never reads stdin, this is the host closing it; a server that reads process.stdin sees
 * the same end as its stream's 'end', after its last byte.
 *
 * What counts as a hang-up, by what fd 0 is (`kind`):
 * - 'pipe' (a pipe or FIFO): no writer is left (POLLHUP);
 * - 'socket' (Linux; Node hosts give their children socketpairs): the peer shut down its writing
 *   side or closed (POLLRDHUP);
 * - 'tty': never (a terminal's end is the SIGHUP it sends; Ctrl+D is seen only by a reader);
 * - 'file' (a regular file, as with `< file`), 'other' (/dev/null, other devices), 'closed',
 *   'socket-unsupported' (a socket on macOS/BSD): never;
 * - 'worker': never; a worker_thread has no fd 0 of its own (its process.stdin is fed by the
 *   parent thread), so only the main thread watches the process's stdin.
 * - 'none': the addon did not load (or Windows): never.
 *
 * A hang-up is the end of file only once no byte is left unread: `onHangup` gets that count.
 * One native watch serves every subscriber; it does not keep the event loop alive.
 */
import { nativeBinding } from '../ground/native'

export type StdinKind = 'pipe' | 'socket' | 'tty' | 'file' | 'other' | 'closed' | 'socket-unsupported' | 'worker' | 'none'

export interface StdinHangupWatch {
  /** What fd 0 is; only 'pipe' and 'socket' are watched. */
  readonly kind: StdinKind
  /** Stops this subscription (the native watch stops with the last one). Idempotent. */
  close(): void
}

const subscribers = new Set<(unread: number) => void>()
let kind: StdinKind | null = null
/** What fd 0 was when its writer side was seen gone, or null. */
let hungUp: StdinKind | null = null

let unreadAtHangup = -1

function onNativeHangup(unread: number): void {
  hungUp = kind ?? 'pipe'
  unreadAtHangup = unread
  stopNative()
  for (const fn of [...subscribers]) fn(unread)
}

function startNative(): StdinKind {
  // Loaded here, not at require('reapkit'): node:worker_threads alone costs about 2 ms to load.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  if (!(require('node:worker_threads') as typeof import('node:worker_threads')).isMainThread) return 'worker'
  const binding = nativeBinding()
  if (!binding?.stdinWatchStart) return 'none'
  try {
    return binding.stdinWatchStart(onNativeHangup)
  } catch {
    // Best effort: out of descriptors for the dup or the wake pipe (EMFILE), no thread (EAGAIN).
    // The end then comes only as 'end' to a reader of stdin, as before this watch existed; a
    // keepalive must not fail to start over it (its signal handlers are already in place).
    return 'none'
  }
}

function stopNative(): void {
  nativeBinding()?.stdinWatchStop?.()
  kind = null
}

const watched = (k: StdinKind): boolean => k === 'pipe' || k === 'socket'

/**
 * Calls `onHangup` once (asynchronously) when stdin's writer side is gone, with the count of bytes
 * then left unread in it (-1: unknown); see the file's comment.
 */
export function watchStdinHangup(onHangup: (unread: number) => void): StdinHangupWatch {
  let fired = false
  const fire = (unread: number): void => {
    if (fired) return
    fired = true
    subscribers.delete(fire)
    onHangup(unread)
  }
  const close = (): void => {
    fired = true
    if (subscribers.delete(fire) && subscribers.size === 0 && !hungUp) stopNative()
  }
  if (hungUp) {
    // Already seen: a pipe's writer never comes back.
    queueMicrotask(() => fire(unreadAtHangup))
    return { kind: hungUp, close }
  }
  if (kind === null) kind = startNative()
  const mine = kind
  if (watched(mine)) subscribers.add(fire)
  else kind = null // nothing runs; ask again next time (fd 0 may have been replaced)
  return { kind: mine, close }
}

/**
 * Whether the application consumes process.stdin (a 'data' or 'readable' listener, or a flowing
 * stream): it will then see the end itself, as 'end', after its last byte. Reads process.stdin,
 * which Node creates on first use without reading from it.
 */
export function applicationReadsStdin(): boolean {
  const stdin = process.stdin
  return stdin.readableFlowing === true || stdin.listenerCount('data') > 0 || stdin.listenerCount('readable') > 0
}
