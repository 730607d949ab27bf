/**
 * withHttpKeepalive(server, options): the keepalive drain for MCP servers on Streamable HTTP (both
 * SDK lines: 1.x's StreamableHTTPServerTransport with sessions, 2.x's createMcpHandler stateless),
 * over node:http or anything built on it (Express's app.listen() returns a node:http server). It
 * works on the HTTP exchanges, below the SDK, so one line covers both lines and any framework.
 *
 * Running, it tracks every exchange: a POST is one work item of the keepalive (begin at arrival,
 * done when its response has ended: the whole SSE stream of a call, every event and the final
 * response; released uncounted if it was a 202 (notifications or responses only) or its client went
 * away); a GET SSE stream (1.x) and a subscriptions/listen stream (2.x, told by its Mcp-Method
 * header) are long-lived streams, not work: they never end by themselves, so they must not hold the
 * drain. It keeps each POST body beside the stream (BodyTee: never consuming it, parsed only if
 * needed) to learn the JSON-RPC id, for the error response of a call the drain abandons.
 *
 * From the first moment of the drain:
 * - a new JSON-RPC request gets HTTP 503 with Retry-After and Connection: close, and the JSON-RPC
 *   error -32099 (ShuttingDownError), its id echoed; an initialize (a new session) is one. A POST
 *   that carries only notifications or responses (notifications/cancelled, the answer to an
 *   elicitation) and a DELETE (a session's end) are part of the work in flight: they pass;
 * - idle keep-alive connections are closed; responses not yet started will close theirs;
 * - the readiness path answers 503; the liveness path still answers 200;
 * - the listening socket keeps accepting while calls are in flight (`stopAccepting: 'after-calls'`,
 *   the default): the SDK clients send a call's cancel, its elicitation answer, a session's DELETE
 *   on a connection of their own, which a closed socket would refuse, leaving the call to wait for
 *   the whole grace. `'at-drain'` closes it at once (for proxies that retry a refused connection
 *   elsewhere, where new calls matter more than answers).
 * After the drain (all calls answered, or the grace over):
 * - a call still running (abandoned) gets its error response at once, before any shutdown hook:
 *   -32099 as the last event of its SSE stream, or as a 503 if nothing was sent yet; what the SDK
 *   writes to it later is dropped;
 * - the listening socket stops accepting; `mcp` is closed: 2.x's handler.close() ends each
 *   subscriptions/listen stream with its graceful empty result, 1.x's transports end their GET
 *   streams; what still streams is ended between two events (an SSE stream is whole events), the
 *   remaining connections are closed, and the report line counts requests (served, drained,
 *   abandoned, refused), sessions, streams and connections.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { createServer } from 'node:http'
import type { Socket } from 'node:net'
import { createKeepalive, type Keepalive, type KeepaliveOptions } from './index'
import { BodyTee, isSse, sentAsSse, shuttingDownResponse, takeOver } from './mcp-http-wire'
// Stateless helpers, bundled into this entry (no second copy of any process-global state).
import { rangeError, typeError } from './ground/errors'
import { describe, validateMs, validateOptions } from './ground/validate'

/** Something the drain closes once the calls in flight are over. */
export interface Closable {
  close(): unknown
}

/**
 * The `mcp` option's shapes: one closable, or a collection as servers keep them (a Map of session
 * transports, as the SDK's Express examples keep them; an array; a record by session id).
 */
export type McpClosables = Closable | ReadonlyMap<unknown, Closable> | Iterable<Closable> | Readonly<Record<string, Closable>>

export interface HttpKeepaliveOptions extends KeepaliveOptions {
  /**
   * The keepalive to drive (for a server that also runs other work under it). Default: a new one,
   * started by SIGTERM, SIGINT and SIGHUP, not by stdin end (`stdin` defaults to false here: a
   * container's stdin is often /dev/null, which ends at once) nor by the parent's death
   * (`parentDeath` defaults to false). With it, the keepalive options
   * (graceMs, signals, exit, onShutdown...) belong to createKeepalive() and may not be given here.
   */
  keepalive?: Keepalive
  /**
   * What to close once the calls in flight are over, so the SDK ends its long-lived streams its own
   * way: 2.x's createMcpHandler() result (its close() ends subscriptions/listen streams with their
   * graceful result), 1.x's session transports (a Map or record of them, read at that moment; its
   * size when the drain begins is the report's `sessions`), or a function that returns them.
   */
  mcp?: McpClosables | (() => McpClosables)
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
  /**
   * When the listening socket stops accepting: 'after-calls' (default), once the calls in flight
   * are over, so that their cancels, elicitation answers and DELETEs, which clients send on a
   * connection of their own, still get in (new calls get 503 meanwhile); or 'at-drain', at once,
   * for proxies that retry a refused connection on another instance.
   */
  stopAccepting?: 'after-calls' | 'at-drain'
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
  readonly res: ServerResponse
  kind: Kind
  /** The keepalive's done() of a call; null once over (or abandoned). */
  done: ((served?: boolean) => void) | null
  /** A POST's body, kept beside the stream (its id, for an abandoned call's error). */
  body: BodyTee | null
  /** Ended by the close (not by the SDK). */
  endedHere: boolean
}

/** The largest body kept to learn a request's id (bigger ones answer an abandoned call with id null). */
const BODY_MAX_BYTES = 1024 * 1024

/** Every Closable in what `mcp` names (read when called). */
function closablesOf(mcp: HttpKeepaliveOptions['mcp']): Closable[] {
  const value = typeof mcp === 'function' ? mcp() : mcp
  if (value === undefined || value === null) return []
  if (typeof (value as Closable).close === 'function') return [value as Closable]
  if (typeof (value as Iterable<Closable>)[Symbol.iterator] === 'function') {
    // A Map's entries (or any map-like store's: an LRU cache, a Map from another realm) are
    // [key, value] pairs: take the values.
    const mapLike = typeof (value as ReadonlyMap<unknown, Closable>).values === 'function' && typeof (value as ReadonlyMap<unknown, Closable>).get === 'function'
    const items = mapLike ? [...(value as ReadonlyMap<unknown, Closable>).values()] : [...(value as Iterable<Closable>)]
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
    throw typeError('ERR_INVALID_ARG_VALUE', `The "${name}" option must be a path that starts with "/". Received ${describe(value)}`)
  }
  return value
}

const KEEPALIVE_OPTIONS = ['graceMs', 'signals', 'stdin', 'parentDeath', 'exit', 'onDrain', 'onShutdown', 'hookTimeoutMs', 'flushTimeoutMs', 'finalLine', 'logger'] as const

/**
 * Puts an HTTP server (node:http, https, or Express's app.listen()) under a keepalive drain. Call it
 * once, right after creating the server (it takes the requests from then on). Returns the drain.
 */
export function withHttpKeepalive(server: Server, options: HttpKeepaliveOptions = {}): HttpKeepalive {
  options = validateOptions(options)
  if (typeof server !== 'object' || server === null || typeof server.emit !== 'function' || typeof server.close !== 'function') {
    throw typeError('ERR_INVALID_ARG_TYPE', 'withHttpKeepalive() takes a node:http (or https) Server, as app.listen() returns')
  }
  if ((server as { [kDrained]?: true })[kDrained]) {
    throw Object.assign(new Error('This server is already under withHttpKeepalive()'), { code: 'ERR_REAPKIT_ALREADY_DRAINED' })
  }
  // Every option is checked before anything is touched: a bad one leaves the server as it was.
  const readinessPath = validatePath(options.readinessPath ?? (options.probePort !== undefined ? '/readyz' : undefined), 'readinessPath')
  const livenessPath = validatePath(options.livenessPath ?? (options.probePort !== undefined ? '/livez' : undefined), 'livenessPath')
  const retryAfter = options.retryAfterSeconds ?? 5
  if (!Number.isInteger(retryAfter) || retryAfter < 0) {
    throw rangeError('ERR_OUT_OF_RANGE', `The "retryAfterSeconds" option must be an integer >= 0. Received ${describe(retryAfter)}`)
  }
  const streamCloseTimeoutMs = validateMs(options.streamCloseTimeoutMs, 'streamCloseTimeoutMs') ?? 1000
  if (options.probePort !== undefined && (!Number.isInteger(options.probePort) || options.probePort < 0 || options.probePort > 65535)) {
    throw rangeError('ERR_OUT_OF_RANGE', `The "probePort" option must be a port number (0 to 65535). Received ${describe(options.probePort)}`)
  }
  if (options.probeHost !== undefined && typeof options.probeHost !== 'string') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "probeHost" option must be a string. Received ${describe(options.probeHost)}`)
  }
  const stopAccepting = options.stopAccepting ?? 'after-calls'
  if (stopAccepting !== 'after-calls' && stopAccepting !== 'at-drain') {
    throw typeError('ERR_INVALID_ARG_VALUE', `The "stopAccepting" option must be 'after-calls' or 'at-drain'. Received ${describe(stopAccepting)}`)
  }
  const { mcp } = options
  if (mcp !== undefined && typeof mcp !== 'object' && typeof mcp !== 'function') {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "mcp" option must be what to close (a handler, transports, or a function). Received ${describe(mcp)}`)
  }
  const hooks = options.onShutdown === undefined ? [] : Array.isArray(options.onShutdown) ? options.onShutdown : [options.onShutdown]
  if (!hooks.every((hook) => typeof hook === 'function')) throw typeError('ERR_INVALID_ARG_TYPE', 'The "onShutdown" option must be a function or an array of functions')
  if (options.onDrain !== undefined && typeof options.onDrain !== 'function') throw typeError('ERR_INVALID_ARG_TYPE', 'The "onDrain" option must be a function')
  let keepalive: Keepalive
  if (options.keepalive !== undefined) {
    if (typeof options.keepalive !== 'object' || options.keepalive === null || typeof options.keepalive.onDrain !== 'function') {
      throw typeError('ERR_INVALID_ARG_TYPE', 'The "keepalive" option must be a keepalive from createKeepalive()')
    }
    const clash = KEEPALIVE_OPTIONS.filter((name) => options[name] !== undefined)
    if (clash.length > 0) throw typeError('ERR_INVALID_ARG_COMBINATION', `Give ${clash.join(', ')} to createKeepalive(), not next to the "keepalive" option`)
    keepalive = options.keepalive
  } else {
    // Not stdin end (a container's stdin is often /dev/null, which ends at once), not the parent's death.
    const own: KeepaliveOptions = { stdin: false, parentDeath: false, graceMs: options.graceMs ?? HTTP_DRAIN_GRACE_MS_DEFAULT }
    // onShutdown is added after the close below, so that the streams end before the user's hooks run.
    for (const name of KEEPALIVE_OPTIONS) {
      const value = options[name]
      if (value !== undefined && name !== 'graceMs' && name !== 'onShutdown') Object.assign(own, { [name]: value })
    }
    keepalive = createKeepalive(own) // checks the rest, before the server is touched
  }

  const exchanges = new Set<Exchange>()
  /** Woken when the last exchange ends (the close waits on it, by event). */
  let emptied: (() => void) | null = null
  /** Waits (bounded) until no exchange is left. */
  const waitEmpty = (ms: number): Promise<void> =>
    exchanges.size === 0 || ms <= 0
      ? Promise.resolve()
      : new Promise((resolve) => {
          const timer = setTimeout(resolve, ms)
          timer.unref()
          emptied = () => {
            clearTimeout(timer)
            resolve()
          }
        })
  /** Open connections, to count what the close closes (server.getConnections() answers only by callback). */
  const connections = new Set<Socket>()
  server.on('connection', (socket: Socket) => {
    connections.add(socket)
    socket.once('close', () => connections.delete(socket))
  })
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
  const reason = (): string => keepalive.stats.reason ?? 'shutdown'

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

  /** A 503 with -32099 for `id`, and the connection closed after it. */
  type Writer = { writeHead: ServerResponse['writeHead']; end: (body: string) => void }
  const answer503 = (res: ServerResponse, id: string | number | null, abandoned: boolean, own?: Writer): void => {
    own ??= { writeHead: res.writeHead.bind(res), end: (b) => void res.end(b) }
    const body = JSON.stringify(shuttingDownResponse(id, reason(), abandoned))
    own.writeHead(503, {
      'content-type': 'application/json',
      'retry-after': String(retryAfter),
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    })
    own.end(body)
  }

  /** A new request while draining: 503, Retry-After, -32099 with its id; counted as refused. */
  const refuse = (req: IncomingMessage, res: ServerResponse, id: string | number | null): void => {
    try {
      keepalive.begin()() // counted by the keepalive as refused (it throws while shutting down)
    } catch {
      // the ShuttingDownError this counting is for
    }
    refusedHere++
    req.resume() // the body nobody will read
    if (!res.headersSent && !res.destroyed) answer503(res, id, false)
  }

  /** Takes the response from the SDK and ends it with the last words given (or none). */
  const endHere = (ex: Exchange, abandoned: boolean): void => {
    const { res } = ex
    if (res.destroyed || res.writableEnded) return
    ex.endedHere = true
    const own = takeOver(res)
    const id = ex.body?.kind()?.id ?? null
    if (!res.headersSent) {
      answer503(res, id, abandoned, {
        writeHead: own.writeHead,
        end: (b) => {
          own.write(b)
          own.end()
        },
      })
    } else if (sentAsSse(res)) {
      if (abandoned) own.write(`event: message\ndata: ${JSON.stringify(shuttingDownResponse(id, reason(), true))}\n\n`)
      own.end()
    } else {
      res.destroy() // a JSON body half written cannot be completed
    }
  }

  const track = (res: ServerResponse, kind: Kind, body: BodyTee | null): Exchange => {
    const ex: Exchange = { res, kind, done: kind === 'call' ? keepalive.begin() : null, body, endedHere: false }
    exchanges.add(ex)
    res.once('close', () => {
      exchanges.delete(ex)
      if (exchanges.size === 0 && emptied) {
        const wake = emptied
        emptied = null
        wake()
      }
      if (ex.kind === 'stream' && draining() && !ex.endedHere) streamsClosed++
      const done = ex.done
      ex.done = null
      // A 202 answered notifications or responses only: not a call. A response that did not finish: its client went away.
      done?.(res.writableFinished && res.statusCode !== 202)
    })
    return ex
  }

  const onRequest = (req: IncomingMessage, res: ServerResponse, forward: () => void): void => {
    if (probeAnswer(req, res)) return
    const method = req.method ?? 'GET'
    const stream =
      (method === 'GET' && isSse(req.headers.accept)) ||
      (method === 'POST' && String(req.headers['mcp-method'] ?? '').toLowerCase() === 'subscriptions/listen')
    const body = method === 'POST' && !stream ? new BodyTee(req, BODY_MAX_BYTES) : null
    if (!draining()) {
      track(res, stream ? 'stream' : method === 'POST' ? 'call' : 'other', body)
      forward()
      return
    }
    // Draining: nothing new starts; what belongs to the work in flight passes.
    res.shouldKeepAlive = false
    if (stream) return refuse(req, res, null)
    if (body === null) {
      track(res, 'other', null)
      forward()
      return
    }
    // Held until the body says what it is (it stays in the stream's buffer for the SDK to read).
    void body.whenKnown().then(({ request, id }) => {
      if (request) return refuse(req, res, id)
      track(res, 'other', body)
      forward()
    })
  }

  const emit = server.emit as (this: Server, event: string | symbol, ...args: unknown[]) => boolean
  server.emit = function drainEmit(this: Server, event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'request') {
      const req = args[0] as IncomingMessage
      const res = args[1] as ServerResponse
      onRequest(req, res, () => emit.call(this, 'request', req, res))
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
    // No probe answers: the orchestrator's probes fail, and it restarts the server. Said at once.
    probeServer.on('error', (err) => process.emitWarning(`withHttpKeepalive: the probe server failed: ${err.message}`, { code: 'REAPKIT_PROBE_SERVER' }))
    probeServer.listen(options.probePort, options.probeHost)
    probeServer.unref() // it never keeps the process alive by itself
  }

  let listenerClosed = false
  const closeListener = (): void => {
    if (listenerClosed) return
    listenerClosed = true
    if (server.listening) server.close(() => {})
    else server.once('listening', () => server.close(() => {})) // a drain before listen() completed
  }

  keepalive.onDrain(() => {
    sessionsAtTrigger = sizeOf(mcp)
    if (stopAccepting === 'at-drain') closeListener()
    // Idle connections go now; a response not yet started closes its connection after it.
    server.closeIdleConnections?.()
    for (const ex of exchanges) if (!ex.res.headersSent) ex.res.shouldKeepAlive = false
  })

  // The grace is over with calls still running: each gets its error response, as its last event,
  // before any shutdown hook runs (one that stops the processes behind them would let the SDK
  // answer them as if they had ended normally).
  keepalive.abandonSignal.addEventListener(
    'abort',
    () => {
      for (const ex of exchanges) {
        if (ex.kind !== 'call') continue
        ex.done = null // not served: the keepalive counted it abandoned
        endHere(ex, true)
      }
    },
    { once: true },
  )

  // The close, bounded within its own hook bound: 2 x streamCloseTimeoutMs and the last writes.
  keepalive.onShutdown(
    async () => {
      closeListener()
      // The SDK ends its long-lived streams its own way (2.x: the graceful empty listen result).
      let closables: Closable[] = []
      try {
        closables = closablesOf(mcp)
      } catch (err) {
        process.emitWarning(`withHttpKeepalive: reading the "mcp" option failed: ${String(err)}`)
      }
      const closing = Promise.allSettled(closables.map((c) => Promise.resolve().then(() => c.close())))
      const until = performance.now() + streamCloseTimeoutMs
      await Promise.race([closing, delay(streamCloseTimeoutMs)])
      await waitEmpty(until - performance.now())
      // What still streams ends between two events; what has not started gets its 503.
      for (const ex of [...exchanges]) {
        if (ex.kind === 'stream') streamsEnded++
        endHere(ex, false)
      }
      await waitEmpty(streamCloseTimeoutMs)
      for (const socket of connections) if (!socket.destroyed) connectionsClosed++
      server.closeAllConnections?.()
      probeServer?.close()
    },
    { timeoutMs: 2 * streamCloseTimeoutMs + 1000 },
  )
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

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)).unref())
