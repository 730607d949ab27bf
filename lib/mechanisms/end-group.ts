/**
 * What exec(), execFile() and fork() do where Node's kill one process: end the child's group.
 *
 * Node's execFile ends a child on `timeout`, on `maxBuffer` and on an abort with `child.kill()`:
 * one signal to one pid. For `exec('sleep 100 & sleep 100', { timeout })` that is the shell alone;
 * both sleeps live on, holding nothing but their own time. reapkit's children lead their own
 * process group, so the same moments end the group: `killSignal` to every member (each pinned,
 * signalled through its pidfd), and SIGKILL to whatever still runs after the kill grace
 * (REAPKIT_KILL_GRACE_MS, default 9 s), as killProcessGracefully does everywhere else.
 */
import type { ChildProcess } from 'node:child_process'
import stopKillPart from './lazy/stop-kill'
import type { SignalLike } from '../ground/validate'

/** Ends `child`'s group with `signal` (then SIGKILL after the grace). Never rejects: a stop that fails leaves Node's own kill. */
export function endGroup(child: ChildProcess, signal: SignalLike): void {
  if (child.pid === undefined) return // never started: its 'error' event says why
  stopKillPart()
    .killProcessGracefully(child, { signal })
    .catch(() => {
      // EPERM (a member became another user's), or the stop's part failed to load: the leader
      // still had Node's kill, as with Node's own exec
    })
}

/**
 * For a child whose `timeout` and `signal` Node's spawn handles itself (fork passes them on, as
 * Node's fork does): Node's spawn kills the leader; this ends the rest of its group at that moment.
 */
export function endGroupWith(child: ChildProcess, options: { timeout?: number | undefined; signal?: AbortSignal | undefined; killSignal?: SignalLike | undefined }): void {
  const killSignal = options.killSignal ?? 'SIGTERM'
  const exited = (): boolean => child.exitCode !== null || child.signalCode !== null
  if (typeof options.timeout === 'number' && options.timeout > 0) {
    const timer = setTimeout(() => {
      if (!exited()) endGroup(child, killSignal)
    }, options.timeout)
    child.once('exit', () => clearTimeout(timer))
  }
  const signal = options.signal
  if (signal) {
    const onAbort = (): void => {
      if (!exited()) endGroup(child, killSignal)
    }
    if (signal.aborted) process.nextTick(onAbort)
    else {
      signal.addEventListener('abort', onAbort, { once: true })
      child.once('exit', () => signal.removeEventListener('abort', onAbort))
    }
  }
}
