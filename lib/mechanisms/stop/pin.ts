/**
 * The pin step: hold the target by a handle (a pidfd on Linux) from the moment its pid is known, so
 * that a pid reused after its exit is never signalled.
 */
import type { ChildProcess } from 'node:child_process'
import { systemError } from '../../ground/errors'
import { signalNumber } from '../../ground/validate'
import { childExit } from '../../ground/wait'
import type { ProcessHandle } from '../handle'
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
