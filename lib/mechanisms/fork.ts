/**
 * fork(): child_process.fork on reapkit's spawn (issue 32 item 2). Node's fork calls Node's spawn
 * from inside child_process, so a patched `child_process.spawn` never reaches it; this one runs
 * `execPath [...execArgv] modulePath [...args]` through reapkit's spawn(): its own process group,
 * the kernel's death signal, the IPC channel Node's fork sets up (`send`, 'message', `serialization`).
 *
 * As Node's: the arguments and their checks, `silent`, `stdio` (a string becomes three of it and
 * 'ipc'; an array must hold 'ipc'), `execPath`, `execArgv` (default process.execArgv, without the
 * `-e` of an eval'd parent, which would fork itself again), `timeout`, `killSignal` and `signal`,
 * which end the child as Node's spawn does, and then the rest of its group (end-group.ts).
 *
 * One default differs from spawn(): `foreground` is false. A forked worker that inherits a terminal
 * is no interactive job; handing it the terminal would take Ctrl-C from its host. One that reads it
 * all the same is stopped by the kernel (SIGTTIN), for good: a warning says so (terminal.ts).
 */
import type { ChildProcess, StdioOptions } from 'node:child_process'
import { inspect } from 'node:util'
import { fileURLToPath } from 'node:url'
import { codedError, typeError } from '../ground/errors'
import { applyKills, readKills } from './end-group'
import type { ForkOptions } from './exec-types'
import { spawn, type SpawnOptions } from './spawn'
import { receivedLikeNode } from './spawn-args'
import { inheritsControllingTerminal, warnOnTerminalStop } from './terminal'

function noNul(value: string, name: string, reason: string): void {
  if (!value.includes('\u0000')) return
  const type = name.includes('.') ? 'property' : 'argument'
  throw typeError('ERR_INVALID_ARG_VALUE', `The ${type} '${name}' ${reason}. Received ${inspect(value)}`)
}

/** A path as Node's fs takes it: a string, or a file: URL. */
function modulePathOf(value: unknown): string {
  let path = value
  if (value instanceof URL || (value !== null && typeof value === 'object' && typeof (value as URL).href === 'string' && typeof (value as URL).protocol === 'string')) {
    path = fileURLToPath(value as URL) // ERR_INVALID_URL_SCHEME for a URL that is not file:
  }
  if (typeof path !== 'string') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "modulePath" argument must be of type string or an instance of Buffer or URL. ${receivedLikeNode(path)}`)
  }
  noNul(path, 'modulePath', 'must be a string, Uint8Array, or URL without null bytes')
  return path
}

/** `stdio` as fork gives it to spawn: with an IPC channel, always. */
function forkStdio(stdio: unknown, silent: unknown): unknown[] {
  const withChannel = (s: unknown): unknown[] => {
    if (s === 'inherit') return [0, 1, 2, 'ipc']
    if (s === 'ignore' || s === 'pipe' || s === 'overlapped') return [s, s, s, 'ipc']
    throw typeError('ERR_INVALID_ARG_VALUE', `The argument 'stdio' is invalid. Received ${inspect(s)}`)
  }
  if (typeof stdio === 'string') return withChannel(stdio)
  if (!Array.isArray(stdio)) return withChannel(silent ? 'pipe' : 'inherit')
  if (!stdio.includes('ipc')) {
    throw codedError('ERR_CHILD_PROCESS_IPC_REQUIRED', "Forked processes must have an IPC channel, missing value 'ipc' in options.stdio")
  }
  return stdio
}

export function fork(modulePath: string | URL, options?: ForkOptions): ChildProcess
export function fork(modulePath: string | URL, args?: readonly string[], options?: ForkOptions): ChildProcess
export function fork(modulePath: string | URL, argsOrOptions?: unknown, maybeOptions?: unknown): ChildProcess {
  const path = modulePathOf(modulePath)
  let args: unknown = argsOrOptions
  let options: unknown = maybeOptions
  if (args == null) args = []
  else if (typeof args === 'object' && !Array.isArray(args)) [options, args] = [args, []]
  else if (!Array.isArray(args)) throw typeError('ERR_INVALID_ARG_TYPE', `The "args" argument must be an instance of Array. ${receivedLikeNode(args)}`)
  if (options != null && (typeof options !== 'object' || Array.isArray(options))) {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "options" argument must be of type object. ${receivedLikeNode(options)}`)
  }
  // A copy on a null prototype, as Node makes it: an option polluted onto Object.prototype is never read.
  const opts = Object.assign(Object.create(null) as Record<string, unknown>, options, { shell: false })
  opts.execPath = opts.execPath || process.execPath
  if (typeof opts.execPath === 'string') noNul(opts.execPath, 'options.execPath', 'must be a string without null bytes')
  let execArgv = (opts.execArgv || process.execArgv) as string[]
  execArgv.forEach((a, i) => typeof a === 'string' && noNul(a, `options.execArgv[${i}]`, 'must be a string without null bytes'))
  // A parent run with `-e code`: its execArgv holds the code; forking with it would run it again.
  const evaluated = (process as { _eval?: string })._eval
  if (execArgv === process.execArgv && evaluated != null) {
    const at = execArgv.lastIndexOf(evaluated)
    if (at > 0) execArgv = [...execArgv.slice(0, at - 1), ...execArgv.slice(at + 1)]
  }
  opts.stdio = forkStdio(opts.stdio, opts.silent)
  if (opts.foreground === undefined) opts.foreground = false
  // Node's spawn would end only the child on a timeout or an abort: these are ours (end-group.ts).
  const kills = readKills(opts)
  delete opts.timeout
  delete opts.signal
  delete opts.killSignal
  const child = spawn(opts.execPath as string, [...execArgv, path, ...(args as string[])], opts as SpawnOptions)
  applyKills(child, kills)
  // In a group of its own and not handed the terminal it inherits: a read of it stops the worker.
  if (opts.foreground === false && opts.group !== false && inheritsControllingTerminal(opts.stdio as StdioOptions)) {
    warnOnTerminalStop(child, `fork(${inspect(path)})`)
  }
  return child
}
