/**
 * The pin step: hold the target by a handle (a pidfd on Linux) from the moment its pid is known, so
 * that a pid reused after its exit is never signalled.
 */
import type { ChildProcess } from 'node:child_process'
import { systemError } from '../../ground/errors'
import { signalNumber } from '../../ground/validate'
import { childExit } from '../../ground/wait'
import { openProcess, type ProcessHandle } from '../handle'
import type { ResolvedTarget } from './resolve'
import type { Pinned } from './types'

/** ESRCH (and the kernel's EINVAL race, mapped to ESRCH natively): the process is gone. Anything else is not. */
export function isGoneError(err: unknown): boolean {
  return (err as { code?: unknown })?.code === 'ESRCH'
}

/** Resolves in the check phase of this loop turn (after the poll phase, where libuv reaps children). */
export function checkPhase(): Promise<void> {
  return new Promise((res) => setImmediate(res))
}

/** Alive, by its pin (signal 0 fails once it has exited): its pid, and a group id equal to it, are held. */
export function pinAlive(pin: Pinned | null): boolean {
  if (!pin || pin.closed) return false
  try {
    pin.signal(0)
    return true
  } catch {
    return false
  }
}

/**
 * A pin for our own child when no handle could be opened (out of descriptors): signalled by pid,
 * which is exact while libuv has not reaped it. The caller signals only from the check phase
 * (checkPhase()), when every child libuv reaped has had its exit reported, and this re-checks the
 * status synchronously right before the syscall. Gone when libuv reports its exit.
 */
export function childPin(child: ChildProcess, pid: number): Pinned {
  let closed = false
  const exit = childExit(child)
  const pin: Pinned = {
    pid,
    get closed() {
      return closed
    },
    exited: exit.promise.then(() => ({ pid, code: child.exitCode, signal: child.signalCode })),
    signal(sig = 'SIGTERM') {
      if (closed) throw systemError('EBADF', 'kill', 'the handle is closed')
      if (child.exitCode !== null || child.signalCode !== null) throw systemError('ESRCH', 'kill', 'the process has exited')
      process.kill(pid, signalNumber(sig))
    },
    ref: () => pin as ProcessHandle,
    unref: () => pin as ProcessHandle,
    close() {
      closed = true
      exit.dispose()
    },
  }
  return pin
}

export interface PinnedTarget extends ResolvedTarget {
  /** Whether the pin was opened by this stop (and is closed at its end). */
  ownLeader: boolean
  /** Why the target could not be pinned by handle (our own child is then pinned by pid), or null. */
  pinError: Error | null
}

/**
 * Pins the target unless it is known to be gone (a ChildProcess that libuv has reaped). A process
 * that can be neither pinned nor proven gone is refused with the error, unless it is our own child.
 */
export async function pinTarget(t: ResolvedTarget): Promise<PinnedTarget> {
  const { pid, child } = t
  // A child not pinned at spawn is pinned by pid, and that is exact only while libuv has not reaped
  // it. libuv reaps a batch of children before it reports their exits one by one, so inside one
  // child's 'exit' another may be reaped already with its exitCode still null: look from the check
  // phase, when every exit reaped in this turn has been reported.
  if (child && !t.leader) await checkPhase()
  const reaped = child !== null && (child.exitCode !== null || child.signalCode !== null)
  if (t.leader || reaped) return { ...t, ownLeader: false, pinError: null }
  try {
    return { ...t, leader: openProcess(pid), ownLeader: true, pinError: null }
  } catch (err) {
    if (isGoneError(err)) return { ...t, ownLeader: false, pinError: null }
    // Not pinned, but not gone either. Our own unreaped child is still safe to signal by pid
    // (libuv has not reaped it, so its pid cannot have been reused); anything else we cannot
    // prove is the process meant, so the call fails with the error rather than report a stop.
    // This process itself (or one of its threads) is never pinned by pid as a child would be.
    if (!child || (err as { code?: unknown })?.code === 'ERR_REAPKIT_SELF') throw err
    return { ...t, leader: childPin(child, pid), ownLeader: true, pinError: err instanceof Error ? err : new Error(String(err)) }
  }
}
