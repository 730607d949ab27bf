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
import { signalNumber } from '../ground/validate'
import { endGroup } from './end-group'
import type {
  ExecFileOptions,
  ExecFileOptionsWithBufferEncoding,
  ExecFileOptionsWithStringEncoding,
  ExecOptions,
  ExecOptionsWithBufferEncoding,
  ExecOptionsWithStringEncoding,
  OutputBuffer,
} from './exec-types'
import { receivedLikeNode, spawn } from './spawn'

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

/** timeout, maxBuffer and killSignal, checked as Node checks them. */
function readLimits(options: Record<string, unknown>): { timeout: number; maxBuffer: number; killSignal: NodeJS.Signals | number } {
  const { timeout = 0, maxBuffer = MAX_BUFFER, killSignal = 'SIGTERM' } = options
  if (timeout != null && !(Number.isInteger(timeout) && (timeout as number) >= 0)) throw outOfRange('timeout', 'an unsigned integer', timeout)
  if (maxBuffer != null && !(typeof maxBuffer === 'number' && maxBuffer >= 0)) throw outOfRange('options.maxBuffer', 'a positive number', maxBuffer)
  let signal: NodeJS.Signals | number = 'SIGTERM'
  if (typeof killSignal === 'string' || typeof killSignal === 'number') {
    signalNumber(killSignal, { allowZero: false }) // ERR_UNKNOWN_SIGNAL before anything runs
    signal = killSignal as NodeJS.Signals | number
  } else if (killSignal != null) {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "options.killSignal" property must be one of type string or number. ${receivedLikeNode(killSignal)}`)
  }
  return { timeout: (timeout as number | null) ?? 0, maxBuffer: (maxBuffer as number | null) ?? MAX_BUFFER, killSignal: signal }
}

/** Buffers one of the child's output streams, up to `maxBuffer` bytes; `overflow` is called past it. */
function collect(stream: NodeJS.ReadableStream & { readableEncoding: BufferEncoding | null } | null, encoding: BufferEncoding | null, maxBuffer: number, overflow: () => void) {
  const chunks: Array<string | Buffer> = []
  let length = 0
  if (stream) {
    if (encoding) stream.setEncoding(encoding)
    stream.on('data', (chunk: string | Buffer) => {
      if (maxBuffer === Infinity) return void chunks.push(chunk)
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
  const { timeout, maxBuffer, killSignal } = readLimits(options)
  const wanted = options.encoding === undefined ? 'utf8' : options.encoding
  const encoding = wanted !== 'buffer' && typeof wanted === 'string' && Buffer.isEncoding(wanted) ? wanted : null
  // Only what Node's execFile gives its spawn, and reapkit's own options.
  const { cwd = null, env = null, gid, uid, shell = false, signal, windowsHide, windowsVerbatimArguments } = options
  const { group, parentDeathSignal, container, cgroup } = options
  const child = spawn(file, args, {
    cwd, env, gid, uid, shell, signal, windowsHide: !!windowsHide, windowsVerbatimArguments: !!windowsVerbatimArguments,
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
  // Node's kill() ends the child; ours ends its group (end-group.ts).
  const kill = (): void => {
    stopReading()
    killed = true
    endGroup(child, killSignal)
  }
  if (signal instanceof AbortSignal || (signal && typeof (signal as AbortSignal).addEventListener === 'function')) {
    // Node's spawn ends the leader on abort (and emits the AbortError): the group goes with it.
    const onAbort = (): void => {
      if (child.exitCode === null && child.signalCode === null) endGroup(child, 'SIGTERM')
    }
    const s = signal as AbortSignal
    if (s.aborted) process.nextTick(onAbort)
    else {
      s.addEventListener('abort', onAbort, { once: true })
      child.once('exit', () => s.removeEventListener('abort', onAbort))
    }
  }
  const stdout = collect(child.stdout as never, encoding, maxBuffer, () => {
    failure = rangeError('ERR_CHILD_PROCESS_STDIO_MAXBUFFER', 'stdout maxBuffer length exceeded')
    kill()
  })
  const stderr = collect(child.stderr as never, encoding, maxBuffer, () => {
    failure = rangeError('ERR_CHILD_PROCESS_STDIO_MAXBUFFER', 'stderr maxBuffer length exceeded')
    kill()
  })
  if (timeout > 0) {
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
  const opts = { ...(options as object) } as Record<string, unknown>
  opts.shell = typeof opts.shell === 'string' ? opts.shell : true
  return execFile(command, opts as ExecFileOptions, callback as Callback)
}

/** util.promisify(exec) and util.promisify(execFile), as Node's: { stdout, stderr }, and `.child`. */
function promised(original: (...args: never[]) => ChildProcess) {
  return (...args: unknown[]): PromiseWithChild<{ stdout: Output; stderr: Output }> => {
    let child: ChildProcess | undefined
    const promise = new Promise<{ stdout: Output; stderr: Output }>((resolve, reject) => {
      child = (original as (...a: unknown[]) => ChildProcess)(...args, (err: (Error & { stdout?: Output; stderr?: Output }) | null, stdout: Output, stderr: Output) => {
        if (err === null) return resolve({ stdout, stderr })
        err.stdout = stdout
        err.stderr = stderr
        reject(err)
      })
    }) as PromiseWithChild<{ stdout: Output; stderr: Output }>
    promise.child = child!
    return promise
  }
}

Object.defineProperty(exec, promisify.custom, { enumerable: false, value: promised(exec) })
Object.defineProperty(execFile, promisify.custom, { enumerable: false, value: promised(execFile) })

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
