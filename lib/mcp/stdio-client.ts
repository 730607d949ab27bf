/**
 * The client side of reapkit/mcp: a drop-in StdioClientTransport for both lines of the MCP SDK.
 *
 * The server runs under reapkit's spawn (its own process group, the kernel's parent-death signal),
 * and close() is the bounded two-phase closeClient: stdin end, then SIGTERM to the whole group, then
 * SIGKILL, never waiting on pipes a helper may hold. The constructor, the events and the errors are
 * the SDK's, so switching is a change of import:
 * - the close budget is the SDK's by default (2 s for stdin end, 2 s after SIGTERM), so a drop-in
 *   is never slower than what it replaces; both bounds are options;
 * - a transport may be started again after close(), as the SDK's may (Client.connect() on it);
 *   each start has its own close, and onclose fires once per start;
 * - start() on a started transport rejects (the SDK's is async and does too);
 * - what reaches onmessage is a JSON-RPC message: JSON of another shape goes to onerror, as the
 *   SDK's schema check does; a line that is not JSON goes to onerror with 1.x and is skipped with
 *   2.x, as each line does. The line is told by the 2.x Protocol's call of
 *   setSupportedProtocolVersions() before start(), which 1.x never makes;
 * - send() before start() or after close() rejects with 1.x's plain Error or, with 2.x, the SDK's
 *   own SdkError (code NOT_CONNECTED) when the 2.x client package can be loaded;
 * - the 2.x client's version negotiation probes a disposable sibling built from `_serverParams`
 *   and reaps it with `_dispose()`: both exist here with the SDK's meaning.
 */
import type { ChildProcess } from 'node:child_process'
import type { PassThrough, Readable, Stream } from 'node:stream'
import { closeClient, killProcessGracefully, spawn } from '../index'
import { validateMs, validateOptions } from '../ground/validate'
import { checkMessage } from './message-check'
import type { JsonRpcMessage, McpTransport } from './types'

/**
 * The SDK's StdioServerParameters: how to start the server. An optional member may be `undefined`
 * (as absent), so that a project with exactOptionalPropertyTypes can pass the SDK's own.
 */
export interface StdioServerParameters {
  command: string
  args?: string[] | undefined
  /** The server's environment; default: a safe subset of this one (DEFAULT_INHERITED_ENV_VARS), as the SDK does. */
  env?: Record<string, string> | undefined
  /** What to do with the server's stderr: 'inherit' (default), 'pipe' (then read `.stderr`), 'ignore', or a stream/fd. */
  stderr?: 'inherit' | 'pipe' | 'ignore' | 'overlapped' | Stream | number | undefined
  cwd?: string | undefined
  /**
   * The largest message (in bytes) the server may send; past it the transport reports an error and
   * closes, as the SDK's does. Default 10 MB (the SDK's STDIO_DEFAULT_MAX_BUFFER_SIZE).
   */
  maxBufferSize?: number | undefined
}

/** The SDK's default bound of the stdio read buffer (1.x and 2.x). */
export const STDIO_DEFAULT_MAX_BUFFER_SIZE = 10 * 1024 * 1024

/** The SDK's close budget: 2 s for the server to leave on stdin end, 2 s more after SIGTERM. */
export const STDIO_CLOSE_TIMEOUT_MS_DEFAULT = 2000
export const STDIO_GRACE_MS_DEFAULT = 2000

/** After close(), how long a server's stderr pipe may stay open (held by a helper) before it is let go. */
const STDERR_DRAIN_MS = 250

export interface StdioClientTransportOptions {
  /** How long the server may take to leave on stdin end before SIGTERM. Default 2000, the SDK's. */
  closeTimeoutMs?: number | undefined
  /** SIGTERM -> SIGKILL grace for the server's whole group. Default 2000, the SDK's. */
  graceMs?: number | undefined
  /** Linux: run the server in a cgroup of its own (spawn's `cgroup`), so close() also ends what left its group. Default false. */
  cgroup?: boolean | undefined
  /**
   * Linux: run the server in a PID namespace of its own (spawn's `pidNamespace`), so that its whole
   * tree ends when this process dies by any means, SIGKILL included. Default false.
   */
  pidNamespace?: boolean | undefined
}

/**
 * Environment variables inherited when none is given, as the SDK's getDefaultEnvironment(): on
 * Windows the 2.x list, which holds all of 1.x's and what npx and cmd.exe need besides (COMSPEC,
 * PATHEXT, PROGRAMDATA, WINDIR...); elsewhere sudo's safe list, the same in both lines.
 */
export const DEFAULT_INHERITED_ENV_VARS: readonly string[] =
  process.platform === 'win32'
    ? ['APPDATA', 'COMSPEC', 'HOMEDRIVE', 'HOMEPATH', 'LOCALAPPDATA', 'PATH', 'PATHEXT', 'PROCESSOR_ARCHITECTURE', 'PROGRAMDATA', 'PROGRAMFILES', 'PROGRAMFILES(X86)', 'PROGRAMW6432', 'SYSTEMDRIVE', 'SYSTEMROOT', 'TEMP', 'USERNAME', 'USERPROFILE', 'WINDIR']
    : ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER']

export function getDefaultEnvironment(): Record<string, string> {
  const env: Record<string, string> = {}
  for (const key of DEFAULT_INHERITED_ENV_VARS) {
    const value = process.env[key]
    if (value !== undefined && !value.startsWith('()')) env[key] = value // no exported shell functions
  }
  return env
}

/** 2.x's SdkError(NOT_CONNECTED) when the 2.x client can be loaded; a plain Error otherwise. */
function notConnectedError(sdkLine: 1 | 2): Error {
  if (sdkLine === 2) {
    try {
      // Loaded from the host's own install at run time, never bundled into this entry (a name in a
      // variable: the bundler leaves the require as it is).
      const name = '@modelcontextprotocol/client'
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const sdk = require(name) as { SdkError?: new (code: string, message: string) => Error; SdkErrorCode?: { NotConnected?: string } }
      if (sdk.SdkError && sdk.SdkErrorCode?.NotConnected) return new sdk.SdkError(sdk.SdkErrorCode.NotConnected, 'Not connected')
    } catch {
      // the 2.x client is not loadable from here: the same code on a plain Error
    }
    return Object.assign(new Error('Not connected'), { code: 'NOT_CONNECTED' })
  }
  return new Error('Not connected')
}

/**
 * A Transport for the SDK's Client that runs the server with reapkit's spawn and closes it with
 * the bounded two-phase closeClient. Same constructor as the SDK's class of this name.
 */
export class StdioClientTransport implements McpTransport {
  readonly #params: StdioServerParameters
  readonly #options: StdioClientTransportOptions
  /** The server of the current start; null before start() and from the moment close() begins. */
  #child: ChildProcess | null = null
  #stderr: PassThrough | null = null
  /** The servers' stderr pipes still piped into #stderr (a closed server's until its pipe ends). */
  readonly #stderrOpen = new Set<Readable>()
  /** The close in flight, for a close() that comes while it runs (the same promise). */
  #closing: Promise<void> | null = null
  readonly #closed = new WeakSet<ChildProcess>()
  #sdkLine: 1 | 2 = 1
  onmessage?: ((message: JsonRpcMessage, extra?: unknown) => void) | undefined
  onclose?: (() => void) | undefined
  onerror?: ((error: Error) => void) | undefined

  constructor(server: StdioServerParameters, options: StdioClientTransportOptions = {}) {
    // Checked here, not at close(): a bad bound found then would leave the server running.
    options = validateOptions(options)
    validateMs(options.closeTimeoutMs, 'closeTimeoutMs')
    validateMs(options.graceMs, 'graceMs')
    if (options.cgroup !== undefined && typeof options.cgroup !== 'boolean') throw Object.assign(new TypeError('The "cgroup" option must be a boolean'), { code: 'ERR_INVALID_ARG_TYPE' })
    if (options.pidNamespace !== undefined && typeof options.pidNamespace !== 'boolean') throw Object.assign(new TypeError('The "pidNamespace" option must be a boolean'), { code: 'ERR_INVALID_ARG_TYPE' })
    // An empty command is start()'s rejection, as the SDK's (Node's ERR_INVALID_ARG_VALUE from spawn).
    if (typeof server !== 'object' || server === null || typeof server.command !== 'string') {
      throw Object.assign(new TypeError('The "server" argument must be an object with a "command" string'), {
        code: 'ERR_INVALID_ARG_TYPE',
      })
    }
    // Own properties only, as every options object in reapkit (validateOptions): an inherited
    // `cwd` or `args` from a polluted Object.prototype must not reach the spawn.
    this.#params = Object.assign(Object.create(null) as StdioServerParameters, server)
    this.#options = options
    if (server.stderr === 'pipe' || server.stderr === 'overlapped') {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { PassThrough } = require('node:stream') as typeof import('node:stream')
      this.#stderr = new PassThrough() // available before start(), as in the SDK
    }
  }

  /** The server's pid once started, else null. */
  get pid(): number | null {
    return this.#child?.pid ?? null
  }

  /** The server's stderr when `stderr: 'pipe'` was given. */
  get stderr(): Stream | null {
    return this.#stderr
  }

  /** @internal The parameters the server is started with: the 2.x client's probe sibling is built from them. */
  get _serverParams(): StdioServerParameters {
    return this.#params
  }

  /** @internal The 2.x Protocol tells its transport the versions it speaks before start(): 1.x never does. */
  setSupportedProtocolVersions(_versions: string[]): void {
    this.#sdkLine = 2
  }

  start(): Promise<void> {
    if (this.#child) return Promise.reject(new Error('StdioClientTransport already started; Client.connect() starts it'))
    return new Promise((resolve, reject) => {
      const child = this.#spawn() // a throw (an empty command) rejects, as in the SDK's async start()
      this.#child = child
      child.on('error', (err) => {
        reject(err) // the first one only: a promise settles once
        this.onerror?.(err)
      })
      child.once('spawn', () => resolve())
      child.once('close', () => this.#ended(child))
      child.stdin!.on('error', (err) => this.onerror?.(err))
      const lines = { buffer: null as Buffer | null } // each start reads its own server's lines
      child.stdout!.on('data', (chunk: Buffer) => this.#read(lines, chunk))
      child.stdout!.on('error', (err) => this.onerror?.(err))
      if (this.#stderr) this.#pipeStderr(child)
    })
  }

  /**
   * The server's stderr into the transport's: ended, as the SDK's, once the server's own ends and no
   * server is current, so `for await` over it finishes after close(). Not ended by a server that
   * ends while the next start's runs (a start() may come while a close() is stopping the last one);
   * a start after the end gets a fresh stream (the SDK's would throw write-after-end there).
   */
  #pipeStderr(child: ChildProcess): void {
    if (this.#stderr!.writableEnded) this.#stderr = new (this.#stderr!.constructor as typeof PassThrough)()
    const into = this.#stderr!
    const from = child.stderr!
    this.#stderrOpen.add(from)
    from.pipe(into, { end: false })
    from.once('end', () => this.#stderrDone(from, into))
    from.once('close', () => this.#stderrDone(from, into))
  }

  /** One server's stderr is over (its end, or close() let go of a pipe a helper still holds). */
  #stderrDone(from: Readable, into: PassThrough): void {
    if (!this.#stderrOpen.delete(from)) return
    from.unpipe(into)
    this.#endStderrIfOver()
  }

  /** No server current and none of their stderr pipes open: the transport's stderr ends. */
  #endStderrIfOver(): void {
    const into = this.#stderr
    if (into && this.#stderrOpen.size === 0 && !this.#child && !into.writableEnded) into.end()
  }

  #spawn(): ChildProcess {
    const stderrOption = this.#stderr ? 'pipe' : (this.#params.stderr ?? 'inherit')
    return spawn(this.#params.command, this.#params.args ?? [], {
      env: this.#params.env ? { ...getDefaultEnvironment(), ...this.#params.env } : getDefaultEnvironment(),
      stdio: ['pipe', 'pipe', stderrOption as 'pipe'],
      windowsHide: process.platform === 'win32', // as both SDK lines: no console window flashes up
      ...(this.#params.cwd ? { cwd: this.#params.cwd } : {}),
      ...(this.#options.cgroup ? { cgroup: true } : {}),
      ...(this.#options.pidNamespace ? { pidNamespace: true } : {}),
    })
  }

  /** The server of one start is over (its 'close', or our close): onclose once for it. */
  #ended(child: ChildProcess): void {
    if (this.#child === child) this.#child = null
    this.#endStderrIfOver() // its stderr may have ended before its 'close' let go of it
    if (this.#closed.has(child)) return
    this.#closed.add(child)
    this.onclose?.()
  }

  #read(lines: { buffer: Buffer | null }, chunk: Buffer): void {
    const max = this.#params.maxBufferSize ?? STDIO_DEFAULT_MAX_BUFFER_SIZE
    if ((lines.buffer?.length ?? 0) + chunk.length > max) {
      // As the SDK: report, drop what was buffered, close (the bounded two-phase close here).
      lines.buffer = null
      this.onerror?.(new Error(`ReadBuffer exceeded maximum size of ${max} bytes`))
      void this.close().catch((err: Error) => this.onerror?.(err))
      return
    }
    lines.buffer = lines.buffer ? Buffer.concat([lines.buffer, chunk]) : chunk
    let nl: number
    while (lines.buffer && (nl = lines.buffer.indexOf(0x0a)) >= 0) {
      const line = lines.buffer.toString('utf8', 0, nl).replace(/\r$/, '')
      lines.buffer = nl + 1 < lines.buffer.length ? lines.buffer.subarray(nl + 1) : null
      // An onmessage that throws is the host's bug, not the server's: as the SDK's transport does,
      // it goes to onerror and the lines behind it in this chunk are still delivered (uncaught, it
      // would crash the host, and the rest of the chunk would wait for the server's next write).
      try {
        this.#deliver(line) // a blank line too: JSON.parse('') fails, reported with 1.x, skipped with 2.x
      } catch (err) {
        this.onerror?.(err instanceof Error ? err : new Error(String(err)))
      }
    }
  }

  #deliver(line: string): void {
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch (err) {
      if (this.#sdkLine === 1) this.onerror?.(err as Error) // 2.x skips stdout noise that is not JSON
      return
    }
    const outcome = checkMessage(value, line, this.#sdkLine)
    if (outcome.error) this.onerror?.(outcome.error)
    else this.onmessage?.(outcome.message as JsonRpcMessage)
  }

  send(message: JsonRpcMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.#child?.stdin
      if (!stdin || stdin.destroyed) return reject(notConnectedError(this.#sdkLine))
      const json = JSON.stringify(message) + '\n'
      if (stdin.write(json)) resolve()
      else stdin.once('drain', resolve)
    })
  }

  /**
   * The bounded two-phase close: stdin end, then the whole group is stopped. Never waits on pipes.
   * The transport lets go of the server at once, as the SDK's does: send() rejects from here on and
   * start() may run a new server while this one is being stopped; a close() meanwhile gets this
   * close's promise.
   */
  close(): Promise<void> {
    const child = this.#child
    if (!child) {
      // No server current: a start() whose command was empty never had one, so nothing else ends
      // the transport's stderr (a `for await` over it would never finish).
      this.#endStderrIfOver()
      return this.#closing ?? Promise.resolve()
    }
    this.#child = null
    if (child.pid === undefined) {
      // start() failed (ENOENT, EACCES): no process, nothing to stop. Resolve, as the SDK's close()
      // does; its 'close' event still gives onclose, and its stderr's end the transport's.
      for (const stream of child.stdio) (stream as Readable | null)?.destroy()
      return Promise.resolve()
    }
    const closing = closeClient(child, {
      closeTimeoutMs: this.#options.closeTimeoutMs ?? STDIO_CLOSE_TIMEOUT_MS_DEFAULT,
      graceMs: this.#options.graceMs ?? STDIO_GRACE_MS_DEFAULT,
    }).then(() => {
      this.#ended(child)
      this.#releaseStderr(child)
    })
    this.#closing = closing
    // Cleared however it settles: a close() that rejected must not answer every later close().
    const settled = (): void => {
      if (this.#closing === closing) this.#closing = null
    }
    void closing.then(settled, settled)
    return closing
  }

  /**
   * The server's group is gone: what it wrote is in the pipe, read within a turn or two of the
   * loop; a pipe still open after STDERR_DRAIN_MS is held by a process outside the group (a setsid
   * helper), whose writes are not the server's: let go of it, so the transport's stream ends.
   */
  #releaseStderr(child: ChildProcess): void {
    const from = child.stderr
    const into = this.#stderr
    if (!from || !into || !this.#stderrOpen.has(from)) return
    setTimeout(() => this.#stderrDone(from, into), STDERR_DRAIN_MS).unref()
  }

  /**
   * @internal The 2.x client's reaper for its version-negotiation probe sibling: stdin end and the
   * group's SIGTERM at once, SIGKILL after 1 s, then our pipe ends destroyed, so a helper that holds
   * the server's stdio can never hold this up.
   */
  async _dispose(): Promise<void> {
    const child = this.#child
    this.#child = null
    if (!child) return
    try {
      child.stdin?.end()
    } catch {
      // already gone
    }
    if (child.exitCode === null && child.signalCode === null) await killProcessGracefully(child, { graceMs: 1000 }).catch(() => {})
    child.stdout?.destroy()
    child.stdin?.destroy()
    child.stderr?.destroy()
  }
}
