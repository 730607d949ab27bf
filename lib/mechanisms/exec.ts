/**
 * exec() and execFile(): child_process.exec and execFile on reapkit's spawn (issue 32 item 2).
 *
 * Node's own exec and execFile call Node's spawn from inside child_process, so patching
 * `child_process.spawn` never reaches them: their children stay in the caller's group, with no
 * death signal. These are the same calls on reapkit's spawn(): the child leads its own group and
 * the kernel kills it (SIGKILL by default) if this process dies, even by SIGKILL. The death signal
 * covers the child only: what a shell (exec's `sh -c`) starts in its turn is in its group, and ends
 * with it on every stop this process makes, but not by the kernel should this process be killed.
 *
 * What a caller sees is Node's: the same arguments and overloads, the same buffering, `maxBuffer`,
 * `encoding`, `timeout`, `killSignal`, `signal`, the same errors (`Command failed: ...` with
 * `code`, `killed`, `signal`, `cmd`), and `util.promisify` gives `{ stdout, stderr }` with `.child`.
 * One difference, the point of it: a `timeout`, a `maxBuffer` overflow or an abort ends the
 * child's whole group, not only the shell (end-group.ts).
 */
import type { ChildProcess, ExecException, ExecFileException, PromiseWithChild } from 'node:child_process'
import { getSystemErrorName, inspect, promisify } from 'node:util'
import { rangeError, typeError } from '../ground/errors'
import type { SignalLike } from '../ground/validate'
import { applyKills, endGroup, readKills } from './end-group'
import type {
  ExecFileOptions,
  ExecFileOptionsWithBufferEncoding,
  ExecFileOptionsWithStringEncoding,
  ExecOptions,
  ExecOptionsWithBufferEncoding,
  ExecOptionsWithStringEncoding,
  OutputBuffer,
} from './exec-types'
import { spawn } from './spawn'
import { receivedLikeNode } from './spawn-args'

/** Node's default maxBuffer (1 MiB). */
const MAX_BUFFER = 1024 * 1024

type Output = string | OutputBuffer
type Callback = (error: ExecFileException | null, stdout: Output, stderr: Output) => void
type Args = readonly string[] | undefined | null

function checkNoNul(value: unknown, name: string): void {
  if (typeof value === 'string' && value.includes('\u0000')) {
    const type = name.includes('.') ? 'property' : 'argument'
    throw typeError('ERR_INVALID_ARG_VALUE', `The ${type} '${name}' must be a string without null bytes. Received ${inspect(value)}`)
  }
}

function outOfRange(name: string, range: string, value: unknown): RangeError {
  return rangeError('ERR_OUT_OF_RANGE', `The value of "${name}" is out of range. It must be ${range}. Received ${inspect(value)}`)
}

/** Node's argument shapes: (file, args?, options?, callback?), where any of the middle three may be left out. */
function readExecFileArgs(rest: unknown[]): { args: string[]; options: Record<string, unknown>; callback: Callback | undefined } {
  let [args, options, callback] = rest
  if (Array.isArray(args)) args = [...(args as string[])]
  else if (args !== null && typeof args === 'object') [callback, options, args] = [options, args, null]
  else if (typeof args === 'function') [callback, options, args] = [args, null, null]
  if (args == null) args = []
  if (typeof options === 'function') callback = options
  else if (options != null && (typeof options !== 'object' || Array.isArray(options))) {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "options" argument must be of type object. ${receivedLikeNode(options)}`)
  }
  if (callback != null && typeof callback !== 'function') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "callback" argument must be of type function. ${receivedLikeNode(callback)}`)
  }
  const opts = (options != null && typeof options === 'object' ? options : {}) as Record<string, unknown>
  if (opts.argv0 != null) {
    if (typeof opts.argv0 !== 'string') throw typeError('ERR_INVALID_ARG_TYPE', `The "options.argv0" property must be of type string. ${receivedLikeNode(opts.argv0)}`)
    checkNoNul(opts.argv0, 'options.argv0')
  }
  return { args: args as string[], options: opts, callback: (callback ?? undefined) as Callback | undefined }
}

/**
 * The options with Node's defaults under them, as Node's execFile spreads them: an option present
 * but undefined replaces its default ({ encoding: undefined } gives Buffers, as Node's does).
 */
function withDefaults(options: Record<string, unknown>): Record<string, unknown> {
  // On a null prototype, as Node's: an option polluted onto Object.prototype (cwd, uid...) is never read.
  const opts: Record<string, unknown> = { __proto__: null, encoding: 'utf8', timeout: 0, maxBuffer: MAX_BUFFER, killSignal: 'SIGTERM', cwd: null, env: null, shell: false, ...options }
  const { timeout, maxBuffer } = opts
  if (timeout != null && !(Number.isInteger(timeout) && (timeout as number) >= 0)) throw outOfRange('timeout', 'an unsigned integer', timeout)
  if (maxBuffer != null && !(typeof maxBuffer === 'number' && maxBuffer >= 0)) throw outOfRange('options.maxBuffer', 'a positive number', maxBuffer)
  readKills({ killSignal: opts.killSignal }) // checked as Node checks it
  return opts
}

/** Buffers one of the child's output streams, up to `maxBuffer` bytes; `overflow` is called past it. */
function collect(stream: NodeJS.ReadableStream & { readableEncoding: BufferEncoding | null } | null, encoding: BufferEncoding | null, maxBuffer: number | null | undefined, overflow: () => void) {
  const chunks: Array<string | Buffer> = []
  let length = 0
  if (stream) {
    if (encoding) stream.setEncoding(encoding)
    stream.on('data', (chunk: string | Buffer) => {
      // Infinity, or present but undefined (Node's spread then left no limit): nothing counted
      if (maxBuffer === Infinity || typeof maxBuffer !== 'number') return void chunks.push(chunk)
      const enc = stream.readableEncoding
      const size = enc ? Buffer.byteLength(chunk as string, enc) : chunk.length
      length += size
      if (length <= maxBuffer) return void chunks.push(chunk)
      // Keep what fits, as Node does (counted in bytes, cut in the chunk's own units).
      chunks.push(chunk.slice(0, maxBuffer - (length - size)))
      overflow()
    })
  }
  return (): Output => (encoding || stream?.readableEncoding ? chunks.join('') : Buffer.concat(chunks as Buffer[]))
}

export function execFile(file: string, callback?: (error: ExecFileException | null, stdout: string, stderr: string) => void): ChildProcess
export function execFile(file: string, args: Args, callback?: (error: ExecFileException | null, stdout: string, stderr: string) => void): ChildProcess
export function execFile(file: string, options: ExecFileOptionsWithBufferEncoding, callback?: (error: ExecFileException | null, stdout: OutputBuffer, stderr: OutputBuffer) => void): ChildProcess
export function execFile(file: string, args: Args, options: ExecFileOptionsWithBufferEncoding, callback?: (error: ExecFileException | null, stdout: OutputBuffer, stderr: OutputBuffer) => void): ChildProcess
export function execFile(file: string, options: ExecFileOptionsWithStringEncoding, callback?: (error: ExecFileException | null, stdout: string, stderr: string) => void): ChildProcess
export function execFile(file: string, args: Args, options: ExecFileOptionsWithStringEncoding, callback?: (error: ExecFileException | null, stdout: string, stderr: string) => void): ChildProcess
export function execFile(file: string, options: ExecFileOptions | undefined | null, callback: ((error: ExecFileException | null, stdout: Output, stderr: Output) => void) | undefined | null): ChildProcess
export function execFile(file: string, args: Args, options: ExecFileOptions | undefined | null, callback: ((error: ExecFileException | null, stdout: Output, stderr: Output) => void) | undefined | null): ChildProcess
export function execFile(file: string, ...rest: unknown[]): ChildProcess {
  const { args, options, callback } = readExecFileArgs(rest)
  const opts = withDefaults(options)
  const { timeout, maxBuffer } = opts as { timeout: number | null | undefined; maxBuffer: number | null | undefined }
  const killSignal = (opts.killSignal ?? 'SIGTERM') as SignalLike
  const encoding = opts.encoding !== 'buffer' && typeof opts.encoding === 'string' && Buffer.isEncoding(opts.encoding) ? opts.encoding : null
  // An abort, as Node's spawn ends the child on it (Node's execFile gives it no killSignal), and the group.
  const kills = readKills({ signal: opts.signal })
  // Only what Node's execFile gives its spawn, and reapkit's own options.
  const { cwd, env, gid, uid, shell, windowsHide, windowsVerbatimArguments, group, parentDeathSignal, container, cgroup } = opts
  const child = spawn(file, args, {
    cwd, env, gid, uid, shell, windowsHide: !!windowsHide, windowsVerbatimArguments: !!windowsVerbatimArguments,
    ...(group !== undefined ? { group } : {}),
    ...(parentDeathSignal !== undefined ? { parentDeathSignal } : {}),
    ...(container !== undefined ? { container } : {}),
    ...(cgroup !== undefined ? { cgroup } : {}),
  } as Parameters<typeof spawn>[2])

  let failure: Error | null = null
  let killed = false
  let exited = false
  let timer: NodeJS.Timeout | undefined

  const stopReading = (): void => {
    child.stdout?.destroy()
    child.stderr?.destroy()
  }
  // Node's kill() ends the child (a kill that throws is what the callback gets); then its group.
  const kill = (): void => {
    stopReading()
    killed = true
    try {
      child.kill(killSignal)
    } catch (e) {
      failure = e as Error
      onClose()
      return
    }
    endGroup(child, killSignal)
  }
  applyKills(child, kills)
  const stdout = collect(child.stdout as never, encoding as BufferEncoding | null, maxBuffer, () => {
    failure = rangeError('ERR_CHILD_PROCESS_STDIO_MAXBUFFER', 'stdout maxBuffer length exceeded')
    kill()
  })
  const stderr = collect(child.stderr as never, encoding as BufferEncoding | null, maxBuffer, () => {
    failure = rangeError('ERR_CHILD_PROCESS_STDIO_MAXBUFFER', 'stderr maxBuffer length exceeded')
    kill()
  })
  if (typeof timeout === 'number' && timeout > 0) {
    timer = setTimeout(() => {
      timer = undefined
      kill()
    }, timeout)
  }

  const onClose = (code?: number | null, sig?: NodeJS.Signals | null): void => {
    if (exited) return
    exited = true
    if (timer) clearTimeout(timer)
    if (!callback) return
    const out = stdout()
    const err = stderr()
    if (!failure && code === 0 && sig === null) return callback(null, out, err)
    const cmd = args.length ? `${file} ${args.join(' ')}` : file
    if (!failure) {
      failure = Object.assign(new Error(`Command failed: ${cmd}\n${String(err)}`), {
        code: typeof code === 'number' && code < 0 ? getSystemErrorName(code) : code,
        killed: child.killed || killed,
        signal: sig,
      })
    }
    ;(failure as ExecFileException).cmd = cmd
    callback(failure as ExecFileException, out, err)
  }
  child.addListener('close', onClose)
  child.addListener('error', (e: Error) => {
    failure = e
    stopReading()
    onClose()
  })
  return child
}

export function exec(command: string, callback?: (error: ExecException | null, stdout: string, stderr: string) => void): ChildProcess
export function exec(command: string, options: ExecOptionsWithBufferEncoding, callback?: (error: ExecException | null, stdout: OutputBuffer, stderr: OutputBuffer) => void): ChildProcess
export function exec(command: string, options: ExecOptionsWithStringEncoding, callback?: (error: ExecException | null, stdout: string, stderr: string) => void): ChildProcess
export function exec(command: string, options: ExecOptions | undefined | null, callback?: (error: ExecException | null, stdout: Output, stderr: Output) => void): ChildProcess
export function exec(command: string, options?: unknown, callback?: unknown): ChildProcess {
  if (typeof command !== 'string') throw typeError('ERR_INVALID_ARG_TYPE', `The "command" argument must be of type string. ${receivedLikeNode(command)}`)
  checkNoNul(command, 'command')
  if (typeof options === 'function') [callback, options] = [options, undefined]
  // A copy, as Node makes: the caller's object is not changed. The shell is /bin/sh unless named.
  const opts: Record<string, unknown> = { __proto__: null, ...(options as object) }
  opts.shell = typeof opts.shell === 'string' ? opts.shell : true
  return execFile(command, opts as ExecFileOptions, callback as Callback)
}

/** util.promisify(exec) and util.promisify(execFile), as Node's: { stdout, stderr }, and `.child`. */
function promised(original: (...args: never[]) => ChildProcess) {
  return (...args: unknown[]): PromiseWithChild<{ stdout: Output; stderr: Output }> => {
    let settle!: { resolve: (v: { stdout: Output; stderr: Output }) => void; reject: (e: unknown) => void }
    const promise = new Promise<{ stdout: Output; stderr: Output }>((resolve, reject) => (settle = { resolve, reject })) as PromiseWithChild<{ stdout: Output; stderr: Output }>
    // Called outside the promise, as Node's: a bad argument throws, it does not reject.
    promise.child = (original as (...a: unknown[]) => ChildProcess)(...args, (err: (Error & { stdout?: Output; stderr?: Output }) | null, stdout: Output, stderr: Output) => {
      if (err === null) return settle.resolve({ stdout, stderr })
      err.stdout = stdout
      err.stderr = stderr
      settle.reject(err)
    })
    return promise
  }
}

// Descriptors on a null prototype: a polluted Object.prototype (get, set) must not turn them into accessors.
Object.defineProperty(exec, promisify.custom, { __proto__: null, enumerable: false, value: promised(exec) } as PropertyDescriptor)
Object.defineProperty(execFile, promisify.custom, { __proto__: null, enumerable: false, value: promised(execFile) } as PropertyDescriptor)

// The promisified forms, typed as @types/node types Node's (util.promisify reads `__promisify__`).
type Promised<T> = PromiseWithChild<{ stdout: T; stderr: T }>
// eslint-disable-next-line @typescript-eslint/no-namespace
export declare namespace exec {
  function __promisify__(command: string): Promised<string>
  function __promisify__(command: string, options: ExecOptionsWithBufferEncoding): Promised<OutputBuffer>
  function __promisify__(command: string, options: ExecOptionsWithStringEncoding): Promised<string>
  function __promisify__(command: string, options: ExecOptions | undefined | null): Promised<Output>
}
// eslint-disable-next-line @typescript-eslint/no-namespace
export declare namespace execFile {
  function __promisify__(file: string): Promised<string>
  function __promisify__(file: string, args: Args): Promised<string>
  function __promisify__(file: string, options: ExecFileOptionsWithBufferEncoding): Promised<OutputBuffer>
  function __promisify__(file: string, args: Args, options: ExecFileOptionsWithBufferEncoding): Promised<OutputBuffer>
  function __promisify__(file: string, options: ExecFileOptionsWithStringEncoding): Promised<string>
  function __promisify__(file: string, args: Args, options: ExecFileOptionsWithStringEncoding): Promised<string>
  function __promisify__(file: string, options: ExecFileOptions | undefined | null): Promised<Output>
  function __promisify__(file: string, args: Args, options: ExecFileOptions | undefined | null): Promised<Output>
}
