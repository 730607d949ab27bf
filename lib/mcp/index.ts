/**
 * reapkit/mcp: adapters for the MCP TypeScript SDK (an optional peer dependency). They work at the
 * Transport level, which both lines of the SDK share (@modelcontextprotocol/sdk 1.x and the split
 * 2.x packages), so they need no import of the SDK itself.
 *
 * withKeepalive(server, keepalive): every incoming request is tracked by the keepalive without
 * wrapping handlers; requests that arrive while draining get a JSON-RPC error response (code -32099,
 * SHUTTING_DOWN_JSONRPC_CODE), not silence; a request counts as done when its response has been
 * written (so the drain never cuts a frame) or when the client cancels it (the SDK then aborts the
 * handler's AbortSignal and sends no response); the server's transport is closed only after the
 * drain, as the keepalive's first shutdown hook. With `{ resource: true }` (an McpServer), the
 * host can read the drain state as the resource reapkit://keepalive (mcp/keepalive-resource.ts).
 *
 * Where the two lines differ, and how this module meets both:
 * - 2.x's StdioServerTransport closes itself when stdin ends (1.x ignores stdin end), which aborts
 *   the requests in flight, unanswered. A close the transport makes of itself waits until the
 *   requests in flight are answered (see TrackedTransport).
 * - 1.x's StdioServerTransport listens for no error on stdout: a client gone mid-drain (EPIPE)
 *   would crash the server before its report. The error goes to the server's onerror instead.
 * - 2.x's Protocol may call setSupportedProtocolVersions() and read hasPerRequestStream on its
 *   transport: both are passed through, like sessionId and setProtocolVersion().
 * - StdioServerParameters are the same in both (command, args, env, stderr, cwd, maxBufferSize).
 */
// Node's types for this entry's .d.ts in a project with `"types": []` (see lib/index.ts).
/// <reference types="node" preserve="true" />
import type { Keepalive } from '../index'
import { typeError } from '../ground/errors'
import { validateOptions } from '../ground/validate'
import { shuttingDownResponse } from './http/wire'
import { canRegisterResources, readsKeepaliveResource, registerKeepaliveResource } from './keepalive-resource'
import type { JsonRpcMessage, McpServerLike, McpTransport } from './types'

export type { JsonRpcMessage, McpServerLike, McpTransport } from './types'

const keyOf = (id: string | number): string => `${typeof id}:${id}`

/**
 * A transport between the SDK and the real one, that tracks requests and refuses them while draining.
 *
 * It also holds back a close that the real transport makes of itself (through its own `close()`)
 * while requests are in flight: the SDK 2.x StdioServerTransport closes itself on stdin end, and
 * its Protocol then aborts every handler in flight and answers none of them, so a host that ends
 * stdin and still reads stdout would lose the responses the drain exists to deliver (and the report
 * would count them drained). Held back, the close happens once the last request in flight is
 * answered or cancelled, or at the latest when the keepalive's first shutdown hook closes the server
 * after the drain. With nothing in flight, or once the drain is over, it goes through at once.
 *
 * When the real transport writes to a stream (`_stdout`, in both lines' StdioServerTransport) and
 * that stream closes (the client is gone: EPIPE), a response can no longer be written: its send
 * fails at once instead of waiting for a 'drain' that never comes, so the drain is not held up to
 * its grace by frames nobody will read.
 */
class TrackedTransport implements McpTransport {
  readonly #inner: McpTransport
  readonly #keepalive: Keepalive
  readonly #pending = new Map<string, () => void>()
  readonly #closeInner: () => Promise<void>
  /** Requests passed on untracked, never refused (a read of the keepalive resource). */
  readonly #untracked: (message: JsonRpcMessage) => boolean
  #closeHeld = false
  /** Rejects once the real transport's output stream has closed. */
  #outputGone: Promise<never> | null = null
  onmessage?: ((message: JsonRpcMessage, extra?: unknown) => void) | undefined
  onclose?: (() => void) | undefined
  onerror?: ((error: Error) => void) | undefined

  constructor(inner: McpTransport, keepalive: Keepalive, untracked: (message: JsonRpcMessage) => boolean) {
    this.#inner = inner
    this.#keepalive = keepalive
    this.#untracked = untracked
    inner.onmessage = (message, extra) => this.#incoming(message, extra)
    inner.onerror = (error) => this.onerror?.(error)
    inner.onclose = () => {
      // Nothing can be answered any more: the requests in flight are over for the drain.
      this.#closeHeld = false
      for (const done of this.#pending.values()) done()
      this.#pending.clear()
      this.onclose?.()
    }
    const close = inner.close
    this.#closeInner = () => close.call(inner)
    // The transport's own calls of this.close() (stdin end, a broken stdout, an oversized message)
    // land here; so does a close through the raw transport from the server's own code.
    inner.close = () => this.#closeRequested()
  }

  get sessionId(): string | undefined {
    return this.#inner.sessionId
  }

  get hasPerRequestStream(): boolean | undefined {
    return this.#inner.hasPerRequestStream
  }

  setProtocolVersion(version: string): void {
    this.#inner.setProtocolVersion?.(version)
  }

  setSupportedProtocolVersions(versions: string[]): void {
    this.#inner.setSupportedProtocolVersions?.(versions)
  }

  async start(): Promise<void> {
    await this.#inner.start()
    this.#watchOutput((this.#inner as { _stdout?: unknown })._stdout)
  }

  #watchOutput(stream: unknown): void {
    const out = stream as NodeJS.WritableStream & { destroyed?: boolean }
    if (typeof out?.write !== 'function' || typeof out.once !== 'function' || typeof out.listenerCount !== 'function') return
    // 1.x's transport has no error listener on stdout: an EPIPE would be an uncaught exception.
    if (out.listenerCount('error') === 0) out.on('error', (err) => this.onerror?.(err))
    this.#outputGone = new Promise<never>((_, reject) => {
      const gone = (): void => reject(new Error('The transport\'s output stream is closed: the client is gone'))
      if (out.destroyed) gone()
      else out.once('close', gone)
    })
    this.#outputGone.catch(() => {})
  }

  /** The SDK's close (Protocol.close(), the keepalive's hook): at once. */
  close(): Promise<void> {
    this.#closeHeld = false
    return this.#closeInner()
  }

  #closeRequested(): Promise<void> {
    const state = this.#keepalive.state
    if ((state === 'running' || state === 'draining') && this.#pending.size > 0) {
      this.#closeHeld = true
      return Promise.resolve()
    }
    return this.close()
  }

  /** One request is over (answered, cancelled): a held close goes through after the last one. */
  #settle(key: string): void {
    const done = this.#pending.get(key)
    if (!done) return
    this.#pending.delete(key)
    done()
    if (this.#closeHeld && this.#pending.size === 0) void this.close().catch((err: Error) => this.onerror?.(err))
  }

  async send(message: JsonRpcMessage, options?: unknown): Promise<void> {
    const isResponse = message.id !== undefined && message.method === undefined
    try {
      const sent = this.#inner.send(message, options)
      await (this.#outputGone ? Promise.race([sent, this.#outputGone]) : sent)
    } finally {
      // After the whole frame was handed to the transport (or could not be).
      if (isResponse) this.#settle(keyOf(message.id!))
    }
  }

  #incoming(message: JsonRpcMessage, extra?: unknown): void {
    if (message.method !== undefined && message.id !== undefined && !this.#untracked(message)) {
      let done: () => void
      try {
        done = this.#keepalive.begin()
      } catch {
        const reason = this.#keepalive.stats.reason ?? 'shutdown'
        void this.#inner.send(shuttingDownResponse(message.id, reason) as JsonRpcMessage).catch(() => {})
        return
      }
      this.#pending.set(keyOf(message.id), done)
    }
    this.onmessage?.(message, extra)
    if (message.method === 'notifications/cancelled' && message.params?.requestId !== undefined) {
      // The SDK has aborted the handler's signal and will send no response: the request is over.
      this.#settle(keyOf(message.params.requestId))
    }
  }
}

export interface WithKeepaliveOptions {
  /**
   * Registers the resource `reapkit://keepalive` on the server (an McpServer of either SDK line): a
   * JSON document (state, reason, inFlight, served, drained, refused, abandoned, drainMs) the host
   * reads with resources/read, answered even while the server drains. Default false: it adds the
   * `resources` capability and an entry to resources/list, which a host may show to its user or
   * model, so a server opts in.
   */
  resource?: boolean | undefined
}

/**
 * Wires `keepalive` into an SDK server (McpServer or Server). Call it before `server.connect()`.
 * Returns the server.
 */
export function withKeepalive<S extends McpServerLike>(server: S, keepalive: Keepalive, options: WithKeepaliveOptions = {}): S {
  const lowLevel: McpServerLike = server.server ?? server
  if (typeof lowLevel.connect !== 'function') throw new TypeError('withKeepalive() takes an MCP SDK server (McpServer or Server)')
  const resource = resourceOption(server, options)
  if (resource) registerKeepaliveResource(server as unknown as Parameters<typeof registerKeepaliveResource>[0], keepalive)
  const untracked = resource ? readsKeepaliveResource : () => false
  const connect = lowLevel.connect.bind(lowLevel)
  lowLevel.connect = (transport: McpTransport) => connect(new TrackedTransport(transport, keepalive, untracked))
  // First hook: close the transport only once the drain is over.
  keepalive.onShutdown(() => lowLevel.close())
  return server
}

/** The `resource` option, checked: it needs an McpServer (a low-level Server has no resource registry). */
function resourceOption(server: McpServerLike, options: WithKeepaliveOptions): boolean {
  const { resource = false } = validateOptions(options)
  if (typeof resource !== 'boolean') throw typeError('ERR_INVALID_ARG_TYPE', 'The "resource" option must be a boolean')
  if (resource && !canRegisterResources(server)) {
    throw typeError('ERR_INVALID_ARG_VALUE', 'The "resource" option needs an McpServer: a low-level Server answers resources/read with its own handlers')
  }
  return resource
}

// ---- The client side: a drop-in StdioClientTransport (mcp/stdio-client.ts) ----
export {
  DEFAULT_INHERITED_ENV_VARS,
  getDefaultEnvironment,
  STDIO_CLOSE_TIMEOUT_MS_DEFAULT,
  STDIO_DEFAULT_MAX_BUFFER_SIZE,
  STDIO_GRACE_MS_DEFAULT,
  StdioClientTransport,
  type StdioClientTransportOptions,
  type StdioServerParameters,
} from './stdio-client'

export { KEEPALIVE_RESOURCE_URI, type KeepaliveResourceState } from './keepalive-resource'

// ---- Streamable HTTP servers: the drain below the SDK, for both lines ----
export {
  type Closable,
  HTTP_DRAIN_GRACE_MS_DEFAULT,
  type HttpKeepalive,
  type HttpKeepaliveOptions,
  type McpClosables,
  withHttpKeepalive,
} from './http/keepalive'

// ---- Supervised servers: an MCP ping as the Supervisor's health check ----
export { type McpPingClient, type McpPingClientSource, mcpPingHealthCheck } from './health'
