/**
 * withHttpKeepalive(server, options): the keepalive drain for MCP servers on Streamable HTTP (both
 * SDK lines: 1.x's StreamableHTTPServerTransport with sessions, 2.x's createMcpHandler stateless),
 * over node:http or anything built on it (Express's app.listen() returns a node:http server). It
 * works on the HTTP exchanges, below the SDK, so one line covers both lines and any framework.
 *
 * Running, it tracks every exchange: a POST is one work item of the keepalive (begin at arrival,
 * done when its response has ended: the whole SSE stream of a call, every event and the final
 * response); a GET SSE stream (1.x) and a subscriptions/listen stream (2.x, told by its Mcp-Method
 * header) are long-lived streams, not work: they never end by themselves, so they must not hold
 * the drain. It tees each POST body as the parser delivers it (never consuming it: the SDK reads
 * it as usual) to learn the JSON-RPC id, for the error response of a call the drain abandons.
 *
 * From the first moment of the drain:
 * - the listening socket stops accepting and idle keep-alive connections are closed; busy ones
 *   close after their response (Connection: close);
 * - a new JSON-RPC request on a connection still open gets HTTP 503 with Retry-After and the
 *   JSON-RPC error -32099 (ShuttingDownError), its id echoed; an initialize (a new session) is one.
 *   A POST that carries only notifications or responses (notifications/cancelled, the answer to
 *   an elicitation) and a DELETE (a session's end) are part of the work in flight: they pass;
 * - the readiness path answers 503; the liveness path still answers 200 (see `probePort`: the
 *   main socket stops accepting, so probes that must keep answering need a port of their own).
 * After the drain (all calls answered, or the grace over), as the keepalive's shutdown hook:
 * - a call still running (abandoned) gets its error response: -32099 as the last event of its SSE
 *   stream, or as a 503 if nothing was sent yet; the stream then ends;
 * - `mcp` is closed: 2.x's handler.close() ends each subscriptions/listen stream with its graceful
 *   empty result, 1.x's transports end their GET streams;
 * - what still streams is ended between two events (an SSE stream is whole events; nothing the SDK
 *   writes after that goes out), the remaining connections are closed, and the report line counts
 *   requests (served, drained, abandoned, refused), sessions, streams and connections.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { createServer } from 'node:http'
import type { Socket } from 'node:net'
import { createKeepalive, type Keepalive, type KeepaliveOptions, SHUTTING_DOWN_JSONRPC_CODE } from './index'
// Stateless validators, bundled into this entry (no second copy of any process-global state).
import { describe, validateMs, validateOptions } from './ground/validate'

/** Something the drain closes once the calls in flight are over. */
export interface Closable {
  close(): unknown
}

export interface HttpKeepaliveOptions extends Omit<KeepaliveOptions, 'stdin' | 'parentDeath'> {
  /**
   * The keepalive to drive (for a server that also runs other work under it). Default: a new one,
   * started by SIGTERM, SIGINT and SIGHUP, not by stdin end (a container's stdin is often
   * /dev/null, which ends at once) nor by the parent's death. With it, the keepalive options
   * (graceMs, signals, exit, onShutdown...) belong to createKeepalive() and may not be given here.
   */
  keepalive?: Keepalive
  /**
   * What to close once the calls in flight are over, so the SDK ends its long-lived streams its own
   * way: 2.x's createMcpHandler() result (its close() ends subscriptions/listen streams with their
   * graceful result), 1.x's session transports (a Map or record of them, read at that moment; its
   * size when the drain begins is the report's `sessions`), or a function that returns them.
   */
  mcp?: Closable | Iterable<Closable> | Record<string, Closable> | (() => Closable | Iterable<Closable> | Record<string, Closable>)
  /** A path answered 200 while running and 503 from the first moment of the drain (Kubernetes readinessProbe). */
  readinessPath?: string
  /** A path answered 200 until the process exits (livenessProbe). */
  livenessPath?: string
  /**
   * Serve the readiness and liveness paths (default '/readyz' and '/livez') on a port of their own
   * too, which keeps accepting during the drain: the main socket stops accepting, so a probe that
   * opens a new connection to it fails, the liveness probe included. 0 picks a free port.
   */
  probePort?: number
  /** The probe port's address. Default: all interfaces, as server.listen(port) (a kubelet probes the pod's IP). */
  probeHost?: string
  /** The Retry-After of a refused request, in seconds. Default 5. */
  retryAfterSeconds?: number
  /** How long the close waits for the SDK to end its streams (and for their last bytes) before ending them itself. Default 1000. */
  streamCloseTimeoutMs?: number
}

/** The default grace of an HTTP server's drain: under Kubernetes' default 30 s terminationGracePeriodSeconds with room for the close. */
export const HTTP_DRAIN_GRACE_MS_DEFAULT = 20_000

export interface HttpKeepalive {
  /** The keepalive that drives the drain (run(), shutdown(), closed, report()). */
  readonly keepalive: Keepalive
  /** The probe server when `probePort` was given (listening), else null. */
  readonly probeServer: Server | null
  /** Exchanges in flight now: calls (work), long-lived streams, other (notifications, DELETE). */
  readonly stats: { calls: number; streams: number; other: number; refused: number }
  /** Starts the drain from code (the keepalive's shutdown()). */
  shutdown(reason?: string): ReturnType<Keepalive['shutdown']>
}

type Kind = 'call' | 'stream' | 'other'

interface Exchange {
  readonly req: IncomingMessage
  readonly res: ServerResponse
  kind: Kind
  /** The keepalive's done() of a call; null once over (or abandoned). */
  done: (() => void) | null
  /** The JSON-RPC id of the request, once the body is known (undefined: not known). */
  id: string | number | null | undefined
}

/** The largest body teed to learn a request's id (bigger ones answer an abandoned call with id null). */
const TEE_MAX_BYTES = 1024 * 1024

const isSse = (value: unknown): boolean => typeof value === 'string' && value.toLowerCase().includes('text/event-stream')

/** What a JSON-RPC body carries: a request (new work, with its id), or only notifications and responses. */
function classifyBody(body: Buffer | null): { request: boolean; id: string | number | null } {
  if (body === null) return { request: true, id: null } // unreadable here: taken for new work
  let parsed: unknown
  try {
    parsed = JSON.parse(body.toString('utf8'))
  } catch {
    return { request: true, id: null }
  }
  for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
    if (typeof message !== 'object' || message === null) return { request: true, id: null }
    const { method, id } = message as { method?: unknown; id?: unknown }
    if (typeof method === 'string' && id !== undefined) {
      return { request: true, id: typeof id === 'string' || typeof id === 'number' ? id : null }
    }
  }
  return { request: false, id: null }
}

/**
 * Tees the body of `req` as the HTTP parser pushes it into the stream (it does, chunk by chunk,
 * through the instance's push()), without reading the stream: whoever handles the request reads it
 * as usual. Resolves with the body at its end; null past `max`, or when the stream's buffer fills
 * while nobody reads it (`holding`: the request is held until the body is known, and the parser
 * would wait for a reader forever).
 */
function teeBody(req: IncomingMessage, max: number, holding: () => boolean): Promise<Buffer | null> {
  if (req.complete || req.readableEnded) return Promise.resolve(null) // the body went by already
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let size = 0
    let settled = false
    const settle = (body: Buffer | null): void => {
      if (settled) return
      settled = true
      req.push = push
      resolve(body)
    }
    const push = req.push
    req.push = function teePush(this: IncomingMessage, chunk: unknown, encoding?: BufferEncoding): boolean {
      const accepted = push.call(this, chunk, encoding)
      if (chunk === null) settle(Buffer.concat(chunks, size))
      else if (!settled) {
        const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, encoding)
        size += buf.length
        if (size > max) settle(null)
        else chunks.push(buf)
        if (!accepted && holding()) settle(null)
      }
      return accepted
    }
    req.once('close', () => settle(null))
    req.once('error', () => settle(null))
  })
}

/** Every Closable in what `mcp` names (read when called). */
function closablesOf(mcp: HttpKeepaliveOptions['mcp']): Closable[] {
  const value = typeof mcp === 'function' ? mcp() : mcp
  if (value === undefined || value === null) return []
  if (typeof (value as Closable).close === 'function') return [value as Closable]
  if (typeof (value as Iterable<Closable>)[Symbol.iterator] === 'function') {
    // A Map's entries are [key, value] pairs: take the values.
    const items = value instanceof Map ? [...value.values()] : [...(value as Iterable<Closable>)]
    return items.filter((item): item is Closable => typeof item?.close === 'function')
  }
  return Object.values(value as Record<string, Closable>).filter((item) => typeof item?.close === 'function')
}

function sizeOf(mcp: HttpKeepaliveOptions['mcp']): number {
  if (mcp === undefined || typeof (mcp as Closable).close === 'function') return 0
  try {
    return closablesOf(mcp).length
  } catch {
    return 0
  }
}

const pathOf = (req: IncomingMessage): string => {
  const url = req.url ?? '/'
  const q = url.indexOf('?')
  return q < 0 ? url : url.slice(0, q)
}

function validatePath(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || !value.startsWith('/')) {
    throw Object.assign(new TypeError(`The "${name}" option must be a path that starts with "/". Received ${describe(value)}`), {
      code: 'ERR_INVALID_ARG_VALUE',
    })
  }
  return value
}

const KEEPALIVE_OPTIONS = ['graceMs', 'signals', 'exit', 'onDrain', 'onShutdown', 'hookTimeoutMs', 'flushTimeoutMs', 'finalLine', 'logger'] as const

/**
 * Puts an HTTP server (node:http, https, or Express's app.listen()) under a keepalive drain. Call it
 * once, right after creating the server (it takes the requests from then on). Returns the drain.
 */
export function withHttpKeepalive(server: Server, options: HttpKeepaliveOptions = {}): HttpKeepalive {
  options = validateOptions(options)
  if (typeof server !== 'object' || server === null || typeof server.emit !== 'function' || typeof server.close !== 'function') {
    throw Object.assign(new TypeError('withHttpKeepalive() takes a node:http (or https) Server, as app.listen() returns'), {
      code: 'ERR_INVALID_ARG_TYPE',
    })
  }
  if ((server as { [kDrained]?: true })[kDrained]) {
    throw Object.assign(new Error('This server is already under withHttpKeepalive()'), { code: 'ERR_REAPKIT_ALREADY_DRAINED' })
  }
  const readinessPath = validatePath(options.readinessPath ?? (options.probePort !== undefined ? '/readyz' : undefined), 'readinessPath')
  const livenessPath = validatePath(options.livenessPath ?? (options.probePort !== undefined ? '/livez' : undefined), 'livenessPath')
  const retryAfter = options.retryAfterSeconds ?? 5
  if (!Number.isInteger(retryAfter) || retryAfter < 0) {
    throw Object.assign(new RangeError(`The "retryAfterSeconds" option must be an integer >= 0. Received ${describe(retryAfter)}`), {
      code: 'ERR_OUT_OF_RANGE',
    })
  }
  const streamCloseTimeoutMs = validateMs(options.streamCloseTimeoutMs, 'streamCloseTimeoutMs') ?? 1000
  if (options.probePort !== undefined && (!Number.isInteger(options.probePort) || options.probePort < 0 || options.probePort > 65535)) {
    throw Object.assign(new RangeError(`The "probePort" option must be a port number (0 to 65535). Received ${describe(options.probePort)}`), {
      code: 'ERR_OUT_OF_RANGE',
    })
  }
  const { mcp } = options
  if (mcp !== undefined && (typeof mcp !== 'object' && typeof mcp !== 'function')) {
    throw Object.assign(new TypeError(`The "mcp" option must be what to close (a handler, transports, or a function). Received ${describe(mcp)}`), {
      code: 'ERR_INVALID_ARG_TYPE',
    })
  }
  const hooks = options.onShutdown === undefined ? [] : Array.isArray(options.onShutdown) ? options.onShutdown : [options.onShutdown]
  if (!hooks.every((hook) => typeof hook === 'function')) {
    throw Object.assign(new TypeError('The "onShutdown" option must be a function or an array of functions'), { code: 'ERR_INVALID_ARG_TYPE' })
  }
  let keepalive: Keepalive
  if (options.keepalive !== undefined) {
    if (typeof options.keepalive !== 'object' || options.keepalive === null || typeof options.keepalive.onDrain !== 'function') {
      throw Object.assign(new TypeError('The "keepalive" option must be a keepalive from createKeepalive()'), { code: 'ERR_INVALID_ARG_TYPE' })
    }
    const clash = KEEPALIVE_OPTIONS.filter((name) => options[name] !== undefined)
    if (clash.length > 0) {
      throw Object.assign(new TypeError(`Give ${clash.join(', ')} to createKeepalive(), not next to the "keepalive" option`), {
        code: 'ERR_INVALID_ARG_COMBINATION',
      })
    }
    keepalive = options.keepalive
  } else {
    const own: KeepaliveOptions = { stdin: false, parentDeath: false, graceMs: options.graceMs ?? HTTP_DRAIN_GRACE_MS_DEFAULT }
    // onShutdown is added after the close below, so that the streams are ended before the user's hooks run.
    for (const name of KEEPALIVE_OPTIONS) {
      if (options[name] !== undefined && name !== 'graceMs' && name !== 'onShutdown') Object.assign(own, { [name]: options[name] })
    }
    keepalive = createKeepalive(own)
  }

  const exchanges = new Set<Exchange>()
  /** Open connections, to count what the close closes (server.getConnections() answers only by callback). */
  const connections = new Set<Socket>()
  server.on('connection', (socket: Socket) => {
    connections.add(socket)
    socket.once('close', () => connections.delete(socket))
  })
  /** Exchanges open per connection: a connection with none is idle. */
  const busy = new WeakMap<Socket, number>()
  let refusedHere = 0
  let sessionsAtTrigger = 0
  let streamsClosed = 0
  let streamsEnded = 0
  let connectionsClosed = 0
  const count = (kind: Kind): number => {
    let n = 0
    for (const ex of exchanges) if (ex.kind === kind) n++
    return n
  }

  const draining = (): boolean => keepalive.state !== 'running'

  const probeAnswer = (req: IncomingMessage, res: ServerResponse): boolean => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false
    const path = pathOf(req)
    let ok: boolean
    if (path === readinessPath) ok = !draining()
    else if (path === livenessPath) ok = true
    else return false
    const body = JSON.stringify({ status: ok ? 'ok' : 'draining', state: keepalive.state })
    res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) })
    res.end(req.method === 'HEAD' ? undefined : body)
    return true
  }

  /** A new request while draining: 503, Retry-After, -32099 with its id; counted as refused. */
  const refuse = (req: IncomingMessage, res: ServerResponse, id: string | number | null): void => {
    try {
      keepalive.begin()() // counted by the keepalive as refused (it throws while shutting down)
    } catch {
      // the ShuttingDownError this counting is for
    }
    refusedHere++
    answer503(req, res, id)
  }

  const answer503 = (req: IncomingMessage, res: ServerResponse, id: string | number | null): void => {
    const reason = keepalive.stats.reason ?? 'shutdown'
    req.resume() // the body nobody will read
    if (res.headersSent || res.destroyed) return
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id,
      error: { code: SHUTTING_DOWN_JSONRPC_CODE, message: `Server is shutting down (${reason})`, data: { reason } },
    })
    res.writeHead(503, {
      'content-type': 'application/json',
      'retry-after': String(retryAfter),
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    })
    res.end(body)
  }

  /** Ends a connection once it has no exchange left (during the drain, after a response). */
  const endIfIdle = (socket: Socket | null): void => {
    if (!socket || socket.destroyed) return
    setImmediate(() => {
      if ((busy.get(socket) ?? 0) === 0 && !socket.destroyed) socket.end()
    })
  }

  const track = (req: IncomingMessage, res: ServerResponse, kind: Kind, done: (() => void) | null): Exchange => {
    const ex: Exchange = { req, res, kind, done, id: undefined }
    exchanges.add(ex)
    const socket = req.socket
    busy.set(socket, (busy.get(socket) ?? 0) + 1)
    res.once('close', () => {
      exchanges.delete(ex)
      busy.set(socket, Math.max(0, (busy.get(socket) ?? 1) - 1))
      if (ex.kind === 'stream' && draining()) streamsClosed++
      const finish = ex.done
      ex.done = null
      finish?.()
      if (draining()) endIfIdle(socket)
    })
    return ex
  }

  const onRequest = (req: IncomingMessage, res: ServerResponse, forward: () => void): void => {
    if (probeAnswer(req, res)) return
    const method = req.method ?? 'GET'
    const stream =
      (method === 'GET' && isSse(req.headers.accept)) ||
      (method === 'POST' && String(req.headers['mcp-method'] ?? '').toLowerCase() === 'subscriptions/listen')
    if (!draining()) {
      const kind: Kind = stream ? 'stream' : method === 'POST' ? 'call' : 'other'
      const ex = track(req, res, kind, kind === 'call' ? keepalive.begin() : null)
      if (kind === 'call') {
        void teeBody(req, TEE_MAX_BYTES, () => false).then((body) => {
          const { request, id } = classifyBody(body)
          ex.id = id
          // Only notifications or responses (a cancel, an elicitation's answer): not a call.
          if (body !== null && !request) ex.kind = 'other'
        })
      }
      forward()
      return
    }
    // Draining: nothing new starts; what belongs to the work in flight passes.
    res.shouldKeepAlive = false
    if (stream) return refuse(req, res, null)
    if (method !== 'POST') {
      track(req, res, 'other', null)
      forward()
      return
    }
    // Held until the body says what it is (it stays in the stream's buffer for the SDK to read).
    void teeBody(req, TEE_MAX_BYTES, () => true).then((body) => {
      const { request, id } = classifyBody(body)
      if (request) return refuse(req, res, id)
      track(req, res, 'other', null)
      forward()
    })
  }

  const emit = server.emit as (this: Server, event: string | symbol, ...args: unknown[]) => boolean
  server.emit = function drainEmit(this: Server, event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'request') {
      const [req, res] = args as [IncomingMessage, ServerResponse]
      onRequest(req, res, () => emit.call(this, event, ...args))
      return true
    }
    return emit.call(this, event, ...args)
  } as Server['emit']
  Object.defineProperty(server, kDrained, { value: true })

  let probeServer: Server | null = null
  if (options.probePort !== undefined) {
    probeServer = createServer((req, res) => {
      if (!probeAnswer(req, res)) res.writeHead(404, { 'content-length': 0 }).end()
    })
    probeServer.on('error', (err) => process.emitWarning(`withHttpKeepalive: the probe server failed: ${err.message}`, { code: 'REAPKIT_PROBE_SERVER' }))
    probeServer.listen(options.probePort, options.probeHost)
    probeServer.unref() // it never keeps the process alive by itself
  }

  keepalive.onDrain(() => {
    sessionsAtTrigger = sizeOf(mcp)
    // Stop accepting; what is idle goes now, what is busy after its response.
    if (server.listening) server.close(() => {})
    server.closeIdleConnections?.()
  })

  // The grace is over with calls still running: each gets its error response, as its last event,
  // before any shutdown hook runs (one that stops the processes behind them would let the SDK
  // answer them as if they had ended normally).
  keepalive.abandonSignal.addEventListener('abort', () => {
    for (const ex of exchanges) {
      if (ex.kind !== 'call') continue
      ex.done = null // not served: the keepalive counted it abandoned
      answerAbandoned(ex, keepalive.stats.reason ?? 'shutdown')
    }
  }, { once: true })

  keepalive.onShutdown(async () => {
    // The SDK ends its long-lived streams its own way (2.x: the graceful empty listen result).
    let closables: Closable[] = []
    try {
      closables = closablesOf(mcp)
    } catch (err) {
      process.emitWarning(`withHttpKeepalive: reading the "mcp" option failed: ${String(err)}`)
    }
    const closing = Promise.allSettled(closables.map((c) => Promise.resolve().then(() => c.close())))
    await Promise.race([closing, delay(streamCloseTimeoutMs)])
    await waitEmpty(exchanges, streamCloseTimeoutMs)
    // What still streams ends between two events; anything else left is cut.
    for (const ex of [...exchanges]) {
      if (ex.kind === 'stream' && ex.res.headersSent && !ex.res.destroyed) {
        streamsEnded++
        endOwn(ex.res)
      } else if (!ex.res.headersSent && !ex.res.destroyed) {
        answer503(ex.req, ex.res, ex.id ?? null)
      } else ex.res.destroy()
    }
    await waitEmpty(exchanges, streamCloseTimeoutMs)
    connectionsClosed = connections.size
    server.closeAllConnections?.()
    probeServer?.close()
  })

  if (options.keepalive === undefined) for (const hook of hooks) keepalive.onShutdown(hook)

  keepalive.extendReport(() => ({
    sessions: sessionsAtTrigger,
    streams: streamsClosed + streamsEnded,
    streamsEnded,
    connections: connectionsClosed,
  }))

  return {
    keepalive,
    probeServer,
    get stats() {
      return { calls: count('call'), streams: count('stream'), other: count('other'), refused: refusedHere }
    },
    shutdown: (reason?: string) => keepalive.shutdown(reason),
  }
}

const kDrained = Symbol('reapkit.httpKeepalive')

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref())

/** Waits (bounded) until no exchange is left. */
async function waitEmpty(exchanges: Set<Exchange>, ms: number): Promise<void> {
  const until = performance.now() + ms
  while (exchanges.size > 0 && performance.now() < until) await delay(10)
}

/**
 * Ends a response the SDK still writes to, after what it wrote so far: whatever it writes later is
 * dropped (not an error: a write after end() would be an 'error' event nobody listens to).
 */
function endOwn(res: ServerResponse, lastEvent?: string): void {
  const write = res.write as (this: ServerResponse, chunk: string) => boolean
  const end = res.end as (this: ServerResponse) => ServerResponse
  res.write = ((..._args: unknown[]) => true) as ServerResponse['write']
  res.end = ((...args: unknown[]) => {
    const cb = args.find((a) => typeof a === 'function') as (() => void) | undefined
    cb?.()
    return res
  }) as ServerResponse['end']
  if (lastEvent !== undefined) write.call(res, lastEvent)
  end.call(res)
}

function answerAbandoned(ex: Exchange, reason: string): void {
  const { res } = ex
  if (res.destroyed) return
  const error = {
    jsonrpc: '2.0',
    id: ex.id ?? null,
    error: {
      code: SHUTTING_DOWN_JSONRPC_CODE,
      message: `Server is shutting down (${reason}): the request was abandoned at the end of the drain`,
      data: { reason, abandoned: true },
    },
  }
  if (!res.headersSent) {
    const body = JSON.stringify(error)
    res.writeHead(503, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' })
    endOwn(res, body)
  } else if (isSse(res.getHeader('content-type')) || isSseHead(res)) {
    endOwn(res, `event: message\ndata: ${JSON.stringify(error)}\n\n`)
  } else {
    res.destroy() // a JSON body half written: it cannot be completed
  }
}

/** Whether the headers already sent said text/event-stream (writeHead(status, headers) leaves getHeader() empty). */
function isSseHead(res: ServerResponse): boolean {
  const head = (res as { _header?: string })._header
  return typeof head === 'string' && /\r\ncontent-type:\s*text\/event-stream/i.test(head)
}
