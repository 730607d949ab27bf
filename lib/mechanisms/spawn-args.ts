/**
 * spawn()'s own arguments checked as Node's spawn checks them (the same codes and messages), for
 * what reapkit consumes before Node's spawn sees it: the file, argv0 and shell go into the exec
 * helper's command line, where Node's own checks would name the wrong argument or miss a wrong
 * value. exec.ts, fork.ts and end-group.ts word their errors the same way.
 */
import { accessSync, constants as fsConstants, statSync } from 'node:fs'
import type { SpawnOptions as NodeSpawnOptions } from 'node:child_process'
import { delimiter } from 'node:path'
import { fileURLToPath } from 'node:url'
import { inspect } from 'node:util'
import { typeError } from '../ground/errors'
import { nativeBinding } from '../ground/native'

/** Node's wording of a wrong value in ERR_INVALID_ARG_TYPE messages ("Received type number (1)"); exec.ts and fork.ts use it too. */
export function receivedLikeNode(value: unknown): string {
  if (value === null || value === undefined) return `Received ${value}`
  if (typeof value === 'function') return `Received function ${value.name || '<anonymous>'}`
  if (typeof value === 'object') return `Received an instance of ${value.constructor?.name ?? 'Object'}`
  const shown = typeof value === 'string' ? `'${value.length > 25 ? `${value.slice(0, 25)}...` : value}'` : typeof value === 'bigint' ? `${value}n` : String(value)
  return `Received type ${typeof value} (${shown})`
}

/**
 * A NUL byte refused as Node's spawn refuses it, named as the caller wrote it. Node would refuse it
 * too, but in the helper's command line, where `args[0]` is `args[6]` and argv0 one of them.
 */
export function refuseNulLikeNode(value: unknown, name: string): void {
  if (typeof value !== 'string' || !value.includes('\u0000')) return
  let shown = inspect(value)
  if (shown.length > 128) shown = `${shown.slice(0, 128)}...`
  const type = name.includes('.') ? 'property' : 'argument'
  throw typeError('ERR_INVALID_ARG_VALUE', `The ${type} '${name}' must be a string without null bytes. Received ${shown}`)
}

/** The command, checked as Node's spawn checks its `file`: same codes and messages. */
export function validateFileLikeNode(command: unknown): asserts command is string {
  if (typeof command !== 'string') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "file" argument must be of type string. ${receivedLikeNode(command)}`)
  }
  refuseNulLikeNode(command, 'file')
  if (command.length === 0) throw typeError('ERR_INVALID_ARG_VALUE', "The argument 'file' cannot be empty. Received ''")
}

/**
 * The options reapkit consumes itself before Node's spawn sees them (argv0 goes to the helper, shell
 * builds the helper's command line): checked here with Node's codes and messages, or a wrong value
 * would slip past Node's own checks ({ argv0: 123 } spawned with spawnargs [123], { shell: 1 } ran sh).
 */
export function validateConsumedOptionsLikeNode(options: { argv0?: unknown; shell?: unknown }): void {
  if (options.argv0 != null && typeof options.argv0 !== 'string') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "options.argv0" property must be of type string. ${receivedLikeNode(options.argv0)}`)
  }
  refuseNulLikeNode(options.argv0, 'options.argv0')
  const shell = options.shell
  if (shell != null && typeof shell !== 'boolean' && typeof shell !== 'string') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "options.shell" property must be one of type boolean or string. ${receivedLikeNode(shell)}`)
  }
}

/** stat errors on a PATH entry that glibc's execvp skips (its execve's errors: it goes on to the next entry). */
const EXECVP_SKIPS = new Set(['ENOENT', 'ENOTDIR', 'EACCES', 'ESTALE', 'ENODEV', 'ETIMEDOUT'])

const STOP = Symbol('execvp stops here')

/** Whether execve could run `file` (a regular file we may execute), or STOP: execvp would stop at its stat error. */
function executable(file: string): boolean | typeof STOP {
  try {
    if (statSync(file, { throwIfNoEntry: false })?.isFile() !== true) return false
  } catch (err) {
    return EXECVP_SKIPS.has((err as NodeJS.ErrnoException).code ?? '') ? false : STOP
  }
  try {
    accessSync(file, fsConstants.X_OK)
    return true
  } catch {
    return false // EACCES: execve fails alike, and execvp skips it
  }
}

/**
 * What the exec helper should exec for `command`, or null when execvp would find nothing to run
 * (spawn() then leaves the failure to Node's spawn). The helper's first exec is this string, with
 * no search of its own when it names a file: the search here is the one that decided the helper is
 * used at all, and each PATH entry before the command's cost the helper a failed execve inside
 * spawn()'s wait (about 10 on the bench machine's PATH).
 * - A command with a slash is returned unchanged (there is no search to save): the kernel resolves
 *   it, `..` after a symlink included, from the child's cwd, as for Node's spawn.
 * - A bare name: the first PATH entry (the child's env, as glibc searches it) holding a regular file
 *   we may execute, as `${dir}/${command}`, joined as strings (never path.resolve, whose lexical
 *   `..` is not what the kernel opens past a symlink); a relative entry under the child's cwd,
 *   joined the same way. The helper falls back to execvp(command) when this exec fails with an error
 *   execvp skips (a script whose interpreter is missing...), so a later entry still runs as it would.
 * - An entry whose stat fails with an error execvp does not skip (ELOOP, ENAMETOOLONG...): execvp
 *   would stop there with it, so the bare name goes to the helper, whose execvp then does so.
 * A missing entry is skipped on a stat that does not throw (an exception per entry was most of this
 * look-up's cost); access(X_OK) then decides, as execvp's execve would.
 */
export function resolveLikeExecvp(command: string, options: NodeSpawnOptions): string | null {
  const given = typeof options.cwd === 'string' ? options.cwd : options.cwd ? fileURLToPath(options.cwd) : undefined
  // The child's cwd as the kernel will reach it: chdir(given) from ours, joined by string.
  const cwd = given === undefined || given === '' ? process.cwd() : given.startsWith('/') ? given : `${process.cwd()}/${given}`
  if (command.includes('/')) return executable(command.startsWith('/') ? command : `${cwd}/${command}`) === true ? command : null
  // As Node's spawn writes the child's environment: a value that is not a string is `${value}`, an
  // undefined one is left out (then glibc's default).
  const raw: unknown = (options.env ?? process.env).PATH
  const path = raw === undefined ? '/bin:/usr/bin' : String(raw)
  // The same walk in one native call where the addon has it (no Stats object, no fs call per
  // entry): only the entry's index comes back, and the file is joined here as below. Not for a
  // PATH or cwd that holds a NUL byte, which the walk below meets as Node's fs does (an error
  // execvp does not skip, then Node's own refusal of the env or cwd).
  const search = nativeBinding()?.execvpSearch
  if (typeof search === 'function' && delimiter === ':' && !path.includes('\u0000') && !cwd.includes('\u0000')) {
    const index = search(path, cwd, command)
    if (index === -2) return command
    if (index < 0) return null
    const dir = path.split(delimiter)[index]!
    return dir.startsWith('/') ? `${dir}/${command}` : `${cwd}/${dir || '.'}/${command}`
  }
  for (const dir of path.split(delimiter)) {
    const file = dir.startsWith('/') ? `${dir}/${command}` : `${cwd}/${dir || '.'}/${command}`
    const found = executable(file)
    if (found === STOP) return command
    if (found) return file
  }
  return null
}
