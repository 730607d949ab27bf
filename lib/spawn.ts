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
 * - A handle pinned to the child (a pidfd), opened synchronously before libuv can reap it, so later
 *   signals can never hit a recycled pid: see spawnedHandle().
 *
 * Where the helper is missing (no addon) the group comes from `detached` (setsid) and no death
 * signal is armed; spawnedInfo() says what was applied.
 */
import type { ChildProcess, SpawnOptions as NodeSpawnOptions } from 'node:child_process'
import { accessSync, constants as fsConstants, statSync } from 'node:fs'
import { delimiter, isAbsolute, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { typeError } from './errors'
import { groupMembersSoon } from './group'
import { type ProcessHandle, openProcess } from './handle'
import { capabilities, execHelperPath } from './native'
import { type SignalLike, signalName, signalNumber } from './validate'

export interface SpawnOptions extends NodeSpawnOptions {
  /** Make the child the leader of a new process group. Default true. */
  group?: boolean
  /**
   * Linux: the signal the kernel sends the child when this process (strictly: the spawning thread)
   * dies. Default 'SIGKILL'; `false` or `null` for none. Ignored where the kernel has no such thing.
   */
  parentDeathSignal?: SignalLike | false | null
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
   * True once the group was seen empty after the child exited. Its id may then belong to someone
   * else's group, so reapkit never lists or signals it again.
   */
  groupGone: boolean
}

const spawned = new WeakMap<ChildProcess, SpawnedInfo>()

/** What spawn() applied to `child`, or undefined for a child it did not start. */
export function spawnedInfo(child: ChildProcess): SpawnedInfo | undefined {
  return spawned.get(child)
}

/**
 * @internal Live members of a spawned child's group; [] once the group was seen empty after the
 * child exited (and from then on, without listing: the id may have been reused by a stranger).
 * While the child is unreaped its pid, and so the group id, cannot be reused.
 */
export async function spawnedGroupMembers(child: ChildProcess): Promise<number[]> {
  const info = spawned.get(child)
  if (!info || info.pgid === null || info.groupGone) return []
  const members = await groupMembersSoon(info.pgid)
  if (members.length === 0 && (child.exitCode !== null || child.signalCode !== null)) info.groupGone = true
  return members
}

/** Whether execvp would find and run `command` (PATH from the child's env, as glibc searches it). */
function resolvable(command: string, options: NodeSpawnOptions): boolean {
  const cwd = typeof options.cwd === 'string' ? options.cwd : options.cwd ? fileURLToPath(options.cwd) : process.cwd()
  const executable = (file: string): boolean => {
    try {
      accessSync(file, fsConstants.X_OK)
      return statSync(file).isFile()
    } catch {
      return false
    }
  }
  if (command.includes('/')) return executable(isAbsolute(command) ? command : resolve(cwd, command))
  const path = (options.env ?? process.env).PATH ?? '/bin:/usr/bin' // glibc's default when PATH is unset
  return path.split(delimiter).some((dir) => executable(resolve(cwd, dir || '.', command)))
}

export function spawn(command: string, options?: SpawnOptions): ChildProcess
export function spawn(command: string, args?: readonly string[], options?: SpawnOptions): ChildProcess
export function spawn(
  command: string,
  argsOrOptions?: readonly string[] | SpawnOptions,
  maybeOptions?: SpawnOptions,
): ChildProcess {
  if (typeof command !== 'string' || command.length === 0) {
    throw typeError('ERR_INVALID_ARG_TYPE', 'The "command" argument must be a non-empty string')
  }
  const args = Array.isArray(argsOrOptions) ? [...(argsOrOptions as readonly string[])] : []
  // Like Node: spawn(cmd, options), spawn(cmd, args, options) and spawn(cmd, null | undefined, options).
  const options: SpawnOptions =
    (Array.isArray(argsOrOptions) || argsOrOptions == null ? maybeOptions : (argsOrOptions as SpawnOptions)) ?? {}
  // `detached` is the idiom for "let it outlive me": no death signal unless asked for explicitly.
  const { group = true, parentDeathSignal = options.detached ? false : 'SIGKILL', ...nodeOptions } = options
  if (typeof group !== 'boolean') throw typeError('ERR_INVALID_ARG_TYPE', 'The "group" option must be a boolean')
  const wanted = parentDeathSignal === false || parentDeathSignal === null ? 0 : signalNumber(parentDeathSignal, { allowZero: false })
  const sig = capabilities().pdeathsig ? wanted : 0

  // A shell command is run by the shell, as Node does it (the helper then execs the shell).
  let file = command
  let argv = args
  if (nodeOptions.shell) {
    file = typeof nodeOptions.shell === 'string' ? nodeOptions.shell : '/bin/sh'
    argv = ['-c', [command, ...args].join(' ')]
  }

  // Loaded on first use: child_process pulls in streams and net, which would double the cost of
  // require('reapkit') for programs that never spawn.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const childProcess = require('node:child_process') as typeof import('node:child_process')
  const helper = execHelperPath()
  let child: ChildProcess
  let applied: Omit<SpawnedInfo, 'handle' | 'groupGone'>
  // With uid/gid the helper runs as that user, who may not reach the package folder: use Node's own.
  const asOtherUser = nodeOptions.uid !== undefined || nodeOptions.gid !== undefined
  if (helper && (group || sig > 0) && !asOtherUser && resolvable(file, nodeOptions)) {
    const argv0 = nodeOptions.argv0 ?? file
    child = childProcess.spawn(helper, [group ? '1' : '0', String(sig), String(process.pid), file, argv0, ...argv], {
      ...nodeOptions,
      shell: false,
      argv0: undefined,
    })
    // What the caller asked for, not the helper (the helper is gone after its exec anyway).
    ;(child as { spawnfile: string }).spawnfile = file
    ;(child as { spawnargs: string[] }).spawnargs = [argv0, ...argv]
    applied = { pgid: group ? (child.pid ?? null) : null, parentDeathSignal: sig > 0 ? signalName(sig) : null }
  } else {
    // No helper, nothing to arm, or a command execvp would not find: Node's own spawn, so its own
    // errors ('error' with ENOENT...) reach the caller unchanged. A group then comes from setsid.
    child = childProcess.spawn(command, args, { ...nodeOptions, detached: nodeOptions.detached || group })
    applied = { pgid: group ? (child.pid ?? null) : null, parentDeathSignal: null }
  }

  let handle: ProcessHandle | null = null
  if (child.pid !== undefined) {
    // Synchronously, before the event loop can run libuv's reaping: the pid is still this child.
    try {
      handle = openProcess(child.pid)
    } catch {
      handle = null // exited and reaped already? then nothing can be signalled by pid anyway
    }
  }
  const info: SpawnedInfo = { ...applied, handle, groupGone: false }
  spawned.set(child, info)
  if (child.pid !== undefined) {
    child.once('exit', () => {
      handle?.close()
      // Look once, right after libuv reaped it: if nobody is left, the group is gone for good.
      if (info.pgid !== null) spawnedGroupMembers(child).catch(() => {})
    })
  }
  return child
}
