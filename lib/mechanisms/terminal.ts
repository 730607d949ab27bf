/**
 * The foreground hand-over (issue 22 item 3). A child that spawn() puts in a group of its own is,
 * for the terminal, a background job: reading the terminal stops it (SIGTTIN) for good, and Ctrl-C
 * and Ctrl-Z reach our group, not its. Node's own spawn leaves the child in our group, so there it
 * just works. A shell does this for a foreground job, and so do we when the child inherits our
 * controlling terminal as its stdin while our group holds the terminal's foreground:
 *
 * - the exec helper makes the child's new group the terminal's foreground before its exec
 *   (native/exec_helper.c, GROUP 2), so it reads the terminal and gets Ctrl-C and Ctrl-Z;
 * - when the child exits, we take the terminal back (native/terminal.cc: tcsetpgrp with SIGTTOU
 *   blocked, since we are in the background by then);
 * - when the child is stopped (Ctrl-Z: SIGTSTP to its group), we take the terminal back and stop
 *   ourselves (SIGSTOP), so the shell that runs us sees its job stopped, as it would have with
 *   Node's spawn; when we are continued (`fg`: SIGCONT), we give the terminal to the child again
 *   if our group holds it (`bg`: we do not) and continue the child's group.
 *
 * While the child holds the terminal, our own reads of it wait (terminal-reads.ts), as a shell's
 * do: from the background they would stop us (SIGTTIN) or, our group orphaned, fail with EIO.
 *
 * Not in the foreground (started with `&`, or no terminal), nothing is handed over: the child is a
 * background job, as any shell would make it. `spawn(..., { foreground: false })` opts out.
 */
import type { ChildProcess, StdioOptions } from 'node:child_process'
import { nativeBinding } from '../ground/native'
import { signalNumber } from '../ground/validate'
import { holdTerminalReads, noteCreatedStdin, releaseTerminalReads } from './terminal-reads'

let stopSignals: { SIGTTIN: number; SIGTTOU: number } | undefined
/**
 * The terminal stop signals' numbers, read from node:os on first use (node:os is not loaded with
 * reapkit, about 0.1 ms) and kept: every SIGCHLD asks, for each background child.
 */
function terminalStops(): { SIGTTIN: number; SIGTTOU: number } {
  if (!stopSignals) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { SIGTTIN, SIGTTOU } = (require('node:os') as typeof import('node:os')).constants.signals
    stopSignals = { SIGTTIN, SIGTTOU }
  }
  return stopSignals
}

interface ForegroundJob {
  child: ChildProcess
  fd: number
  pgid: number
  stopped: boolean
}

const jobs = new Set<ForegroundJob>()

/** Whether the child gets our own fd `fd` (not a pipe or a file of its own). */
function inherits(stdio: StdioOptions | undefined, fd: number): boolean {
  if (stdio === 'inherit') return true
  if (!Array.isArray(stdio)) return false
  const entry: unknown = stdio[fd]
  return entry === 'inherit' || entry === fd || (typeof entry === 'object' && entry !== null && (entry as { fd?: unknown }).fd === fd)
}

/** Our group's id, or null when it cannot be read (no addon). */
function ownGroup(): number | null {
  try {
    const binding = nativeBinding()
    return binding ? binding.getpgid(0) : null
  } catch {
    return null
  }
}

/**
 * 0 when the child's stdin is our controlling terminal, inherited, while our group holds its
 * foreground; null otherwise (then nothing is handed over). Stdin decides: a child that only writes
 * to the terminal (an MCP server with stderr inherited, say) is no interactive job, and giving it
 * the foreground would take Ctrl-C away from its host.
 */
export function foregroundTerminal(stdio: StdioOptions | undefined): number | null {
  const binding = process.platform === 'win32' ? null : nativeBinding()
  if (!binding?.tcgetpgrp) return null
  if (!inherits(stdio, 0)) return null
  // node:tty loads here, for a child that inherits our stdin, not with reapkit.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  if (!(require('node:tty') as typeof import('node:tty')).isatty(0)) return null
  try {
    if (binding.tcgetpgrp(0) !== ownGroup()) return null
  } catch {
    return null // ENOTTY: a terminal, but not our controlling one
  }
  noteCreatedStdin() // before the child starts: it changes what tells (terminal-reads.ts)
  return 0
}

/**
 * After spawn() returned (the helper has run its hand-over before the exec): follows the child as
 * the terminal's foreground job. False when the child's group did not get the terminal.
 */
export function followForeground(child: ChildProcess, fd: number): boolean {
  const pgid = child.pid
  const binding = nativeBinding()
  if (pgid === undefined || !binding?.tcgetpgrp) return false
  try {
    if (binding.tcgetpgrp(fd) !== pgid) return false
  } catch {
    return false
  }
  const job: ForegroundJob = { child, fd, pgid, stopped: false }
  jobs.add(job)
  holdTerminalReads(fd)
  if (jobs.size === 1) {
    process.on('SIGCHLD', onChildSignal)
    process.on('SIGCONT', onContinue)
  }
  child.once('exit', () => {
    jobs.delete(job)
    if (jobs.size === 0) {
      process.removeListener('SIGCHLD', onChildSignal)
      process.removeListener('SIGCONT', onContinue)
    }
    takeBack(job)
  })
  return true
}

/** Gives the terminal back to our group, if the job's group still holds it; our reads go on once it is ours. */
function takeBack(job: ForegroundJob): void {
  const own = ownGroup()
  if (own === null) return releaseTerminalReads()
  try {
    const binding = nativeBinding()!
    if (binding.tcgetpgrp!(job.fd) === job.pgid) binding.tcsetpgrp!(job.fd, own)
    if (binding.tcgetpgrp!(job.fd) === own) releaseTerminalReads()
  } catch {
    releaseTerminalReads() // the terminal is gone (hang-up): a read says so at once, as it would have
  }
}

/** Our own child, not yet reaped: its pid, and so its group id, cannot be anyone else's. */
const unreaped = (job: ForegroundJob): boolean => job.child.exitCode === null && job.child.signalCode === null

/** SIGCHLD: a foreground job that stopped takes us with it (the terminal first comes back to us). */
function onChildSignal(): void {
  let stop = false
  for (const job of jobs) {
    if (job.stopped || !unreaped(job)) continue
    let stopped = false
    try {
      stopped = nativeBinding()!.childStopped!(job.pgid)
    } catch {
      continue
    }
    if (!stopped) continue
    job.stopped = true
    takeBack(job)
    stop = true
  }
  // SIGSTOP, not SIGTSTP: a handler the application installed must not turn this into a no-op.
  if (stop) process.kill(process.pid, 'SIGSTOP')
}

/** SIGCONT: the stopped job goes on too, in the foreground if we were given it back (`fg`). */
function onContinue(): void {
  const own = ownGroup()
  const binding = nativeBinding()!
  for (const job of jobs) {
    if (!job.stopped || !unreaped(job)) continue
    job.stopped = false
    try {
      if (own !== null && binding.tcgetpgrp!(job.fd) === own) {
        binding.tcsetpgrp!(job.fd, job.pgid)
        holdTerminalReads(job.fd)
      }
    } catch {
      // no terminal any more: the job goes on in the background
    }
    try {
      binding.killpg(job.pgid, signalNumber('SIGCONT'))
    } catch {
      // ESRCH: the group is gone
    }
  }
}

/**
 * Whether the child gets our controlling terminal as its stdin (inherited), whoever holds its
 * foreground: left out of it (fork()'s default), a child that reads it is stopped (SIGTTIN).
 */
export function inheritsControllingTerminal(stdio: StdioOptions | undefined): boolean {
  const binding = nativeBinding()
  if (process.platform === 'win32' || !binding?.tcgetpgrp || !inherits(stdio, 0)) return false
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  if (!(require('node:tty') as typeof import('node:tty')).isatty(0)) return false
  try {
    binding.tcgetpgrp(0)
    return true
  } catch {
    return false
  }
}

const background = new Map<ChildProcess, string>()

/** SIGCHLD: a background child that a terminal stop took (SIGTTIN, SIGTTOU) is named, once. */
function onBackgroundSignal(): void {
  for (const [child, what] of background) {
    if (child.exitCode !== null || child.signalCode !== null) continue // reaped: its pid may be another's
    let sig = 0
    try {
      sig = nativeBinding()!.childStopSignal!(child.pid!)
    } catch {
      continue
    }
    const stops = terminalStops()
    if (sig !== stops.SIGTTIN && sig !== stops.SIGTTOU) continue
    forget(child)
    const name = sig === stops.SIGTTIN ? 'SIGTTIN' : 'SIGTTOU'
    const did = name === 'SIGTTIN' ? 'read' : 'wrote to or set up'
    process.emitWarning(
      `${what} (pid ${child.pid}) is stopped by ${name}: it ${did} the terminal, which it does not hold (foreground: false), and stays stopped until continued. Give it a stdin of its own (stdio 'pipe' or 'ignore' for fd 0), or the terminal (foreground: true).`,
      { code: 'REAPKIT_BACKGROUND_TERMINAL_STOP' },
    )
  }
}

function forget(child: ChildProcess): void {
  background.delete(child)
  if (background.size === 0) process.removeListener('SIGCHLD', onBackgroundSignal)
}

/**
 * A child that inherits our controlling terminal without holding it (`what` names it in the
 * warning): if the terminal stops it (it read the terminal from the background: the kernel stops
 * it with SIGTTIN, for good, and nothing else would tell), one warning says so.
 */
export function warnOnTerminalStop(child: ChildProcess, what: string): void {
  if (child.pid === undefined || !nativeBinding()?.childStopSignal) return
  if (background.size === 0) process.on('SIGCHLD', onBackgroundSignal)
  background.set(child, what)
  child.once('exit', () => forget(child))
}
