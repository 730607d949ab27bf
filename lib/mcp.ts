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
 * drain, as the keepalive's first shutdown hook.
 */
import { type Keepalive, SHUTTING_DOWN_JSONRPC_CODE } from './index'

/** The part of the SDK's Transport interface this module relies on (1.x and 2.x alike). */
export interface McpTransport {
  start(): Promise<void>
  send(message: JsonRpcMessage, options?: unknown): Promise<void>
  close(): Promise<void>
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JsonRpcMessage, extra?: unknown) => void
  sessionId?: string
  setProtocolVersion?: (version: string) => void
}

export type JsonRpcMessage = {
  jsonrpc: '2.0'
  id?: string | number
  method?: string
  params?: Record<string, unknown> & { requestId?: string | number }
  result?: unknown
  error?: unknown
}

/** An SDK server: McpServer (which has `.server`) or the low-level Server. */
export interface McpServerLike {
  connect(transport: McpTransport): Promise<void>
  close(): Promise<void>
  server?: McpServerLike
}

const keyOf = (id: string | number): string => `${typeof id}:${id}`

/** A transport between the SDK and the real one, that tracks requests and refuses them while draining. */
class TrackedTransport implements McpTransport {
  readonly #inner: McpTransport
  readonly #keepalive: Keepalive
  readonly #pending = new Map<string, () => void>()
  onmessage?: (message: JsonRpcMessage, extra?: unknown) => void
  onclose?: () => void
  onerror?: (error: Error) => void

  constructor(inner: McpTransport, keepalive: Keepalive) {
    this.#inner = inner
    this.#keepalive = keepalive
    inner.onmessage = (message, extra) => this.#incoming(message, extra)
    inner.onerror = (error) => this.onerror?.(error)
    inner.onclose = () => {
      // Nothing can be answered any more: the requests in flight are over for the drain.
      for (const done of this.#pending.values()) done()
      this.#pending.clear()
      this.onclose?.()
    }
  }

  get sessionId(): string | undefined {
    return this.#inner.sessionId
  }

  setProtocolVersion(version: string): void {
    this.#inner.setProtocolVersion?.(version)
  }

  start(): Promise<void> {
    return this.#inner.start()
  }

  close(): Promise<void> {
    return this.#inner.close()
  }

  async send(message: JsonRpcMessage, options?: unknown): Promise<void> {
    const isResponse = message.id !== undefined && message.method === undefined
    const done = isResponse ? this.#pending.get(keyOf(message.id!)) : undefined
    try {
      await this.#inner.send(message, options)
    } finally {
      if (done) {
        this.#pending.delete(keyOf(message.id!))
        done() // after the whole frame was handed to the transport
      }
    }
  }

  #incoming(message: JsonRpcMessage, extra?: unknown): void {
    if (message.method !== undefined && message.id !== undefined) {
      let done: () => void
      try {
        done = this.#keepalive.begin()
      } catch {
        const reason = this.#keepalive.stats.reason ?? 'shutdown'
        void this.#inner
          .send({
            jsonrpc: '2.0',
            id: message.id,
            error: { code: SHUTTING_DOWN_JSONRPC_CODE, message: `Server is shutting down (${reason})`, data: { reason } },
          })
          .catch(() => {})
        return
      }
      this.#pending.set(keyOf(message.id), done)
    }
    this.onmessage?.(message, extra)
    if (message.method === 'notifications/cancelled' && message.params?.requestId !== undefined) {
      // The SDK has aborted the handler's signal and will send no response: the request is over.
      const key = keyOf(message.params.requestId)
      this.#pending.get(key)?.()
      this.#pending.delete(key)
    }
  }
}

/**
 * Wires `keepalive` into an SDK server (McpServer or Server). Call it before `server.connect()`.
 * Returns the server.
 */
export function withKeepalive<S extends McpServerLike>(server: S, keepalive: Keepalive): S {
  const lowLevel: McpServerLike = server.server ?? server
  if (typeof lowLevel.connect !== 'function') throw new TypeError('withKeepalive() takes an MCP SDK server (McpServer or Server)')
  const connect = lowLevel.connect.bind(lowLevel)
  lowLevel.connect = (transport: McpTransport) => connect(new TrackedTransport(transport, keepalive))
  // First hook: close the transport only once the drain is over.
  keepalive.onShutdown(() => lowLevel.close())
  return server
}
