// The HTTP front of the process server: MCP Streamable HTTP at /mcp (the 1.x SDK's
// StreamableHTTPServerTransport in session mode, one McpServer and transport per session), behind
// the checks of its security model, under reapkit's HTTP drain (withHttpKeepalive).
//
// Every request to /mcp passes, in this order, before any body is read or any JSON parsed:
//   1. Host: bound to a loopback address, the Host header must name localhost, 127.0.0.1 or [::1]
//      (any port); anything else is 403 (DNS rebinding: a web page whose name resolves to 127.0.0.1).
//   2. Origin: absent (a non-browser client) or on the allow-list (--allow-origin, which replaces
//      the default: http(s) on localhost, 127.0.0.1 or [::1], any port); else 403.
//   3. Authorization: Bearer <one of the tokens>, compared in constant time; else 401 with
//      WWW-Authenticate: Bearer.
//   4. Mcp-Session-Id: a session of this very token; another token's session is 404, as an unknown
//      one, so no other client can use, list, terminate or cancel in it.
//   5. The body: over --max-body-bytes is 413, told by Content-Length or by counting what arrives.
// None of these refusals reaches the SDK, so none can start a process.
//
// GET /metrics: the supervisor's and the drain's figures in Prometheus text (prom-client, when it is installed;
// 501 otherwise), behind the same Host, Origin and token checks.
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto'
import { createServer } from 'node:http'
import { isIP } from 'node:net'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js'
import { withHttpKeepalive } from 'reapkit/mcp'

export const MCP_PATH = '/mcp'
export const METRICS_PATH = '/metrics'
const LOCAL_NAMES = new Set(['localhost', '127.0.0.1', '[::1]'])

/** Whether `host` (an address or a name to bind) is a loopback one. */
export function isLoopback(host) {
  if (host === 'localhost') return true
  if (isIP(host) === 4) return host.startsWith('127.')
  return host === '::1' || host.startsWith('::ffff:127.')
}

/** The hostname of a Host header or an origin's URL ('[::1]' keeps its brackets), or null. */
function hostnameOf(value) {
  try {
    return new URL(value.includes('://') ? value : `http://${value}`).hostname.toLowerCase()
  } catch {
    return null
  }
}

/** `--allow-origin` values as origins (scheme://host[:port]); throws on one that is not. */
export function parseOrigins(values) {
  return values.map((value) => {
    const url = new URL(value) // throws on garbage: a typo must not silently allow nothing
    if (url.origin === 'null') throw new TypeError(`--allow-origin ${value}: not an http(s) origin`)
    return url.origin
  })
}

const sha256 = (s) => createHash('sha256').update(s, 'utf8').digest()

/**
 * Starts the HTTP mode: listens, prints `process-server: listening on http://HOST:PORT/mcp` on
 * stderr and returns the drain. `newServer()` makes one McpServer (tools registered) per session;
 * `tools.endSession(id)` stops a session's processes when it ends.
 */
export async function serveHttp(options) {
  const { port, host, tokens, allowOrigins, maxBodyBytes, sessionIdleMs, graceMs, newServer, tools, onShutdown, metrics } = options
  const tokenDigests = tokens.map(sha256)
  const checkHost = isLoopback(host)

  /** Open sessions by id: { id, tokenId, transport, server, active, timer, ended }. */
  const sessions = new Map()

  /** The index of the token the request carries, or -1. Every token is compared, in constant time. */
  const tokenIdOf = (req) => {
    const match = /^Bearer +([^\s]+) *$/i.exec(req.headers.authorization ?? '')
    if (!match) return -1
    const digest = sha256(match[1])
    let found = -1
    tokenDigests.forEach((d, i) => {
      if (timingSafeEqual(d, digest) && found < 0) found = i
    })
    return found
  }
  const originAllowed = (origin) => {
    let url
    try {
      url = new URL(origin)
    } catch {
      return false // 'null' (a sandboxed page, a file) included
    }
    if (allowOrigins.length > 0) return allowOrigins.includes(url.origin)
    return (url.protocol === 'http:' || url.protocol === 'https:') && LOCAL_NAMES.has(url.hostname)
  }

  // ---- sessions: one McpServer and transport each; ended by DELETE, by the idle timeout, by the drain
  const endSession = (entry) => {
    if (entry.ended) return
    entry.ended = true
    clearTimeout(entry.timer)
    if (entry.id === null) return
    sessions.delete(entry.id)
    void tools.endSession(entry.id) // its processes stop with it
  }
  /** An exchange of the session begins: it is not idle until the last one ends (a GET stream included). */
  const begin = (entry, res) => {
    entry.active++
    clearTimeout(entry.timer)
    res.once('close', () => {
      entry.active--
      if (entry.id === null) {
        if (!entry.ended && entry.active === 0) void entry.server.close() // an initialize that made no session
        return
      }
      if (entry.active === 0 && !entry.ended) {
        // No request and no open stream: the client may be gone. Closing the server closes the
        // transport, which ends the session (endSession, by its onclose) and aborts its calls.
        entry.timer = setTimeout(() => void entry.server.close(), sessionIdleMs)
        entry.timer.unref()
      }
    })
  }
  const newSession = async (tokenId) => {
    const entry = { id: null, tokenId, transport: null, server: null, active: 0, timer: undefined, ended: false }
    entry.transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        entry.id = id
        sessions.set(id, entry)
      },
    })
    entry.transport.onclose = () => endSession(entry) // DELETE, server.close(), the drain's close
    entry.server = newServer()
    await entry.server.connect(entry.transport)
    return entry
  }

  // ---- answers
  const send = (res, status, body, headers = {}) => {
    if (res.headersSent) return void res.end()
    const text = typeof body === 'string' ? body : JSON.stringify(body)
    res.writeHead(status, {
      'content-type': typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json',
      'content-length': Buffer.byteLength(text),
      ...headers,
    })
    res.end(text)
  }
  const rpcError = (res, status, code, message, headers) => send(res, status, { jsonrpc: '2.0', error: { code, message }, id: null }, headers)
  const tooLarge = (req, res) => {
    rpcError(res, 413, -32600, `Payload Too Large: the body is over ${maxBodyBytes} bytes`, { connection: 'close' })
    // What the client still sends is read and dropped (never kept, never parsed), for a while.
    req.resume()
    setTimeout(() => req.socket.destroy(), 5000).unref()
  }

  /** Reads the body, counting: { text } or { tooLarge: true } (or { aborted: true }). */
  const readBody = (req) =>
    new Promise((resolve) => {
      const chunks = []
      let size = 0
      const onData = (chunk) => {
        size += chunk.length
        if (size <= maxBodyBytes) return void chunks.push(chunk)
        req.off('data', onData)
        req.pause()
        resolve({ tooLarge: true })
      }
      req.on('data', onData)
      req.once('end', () => resolve({ text: Buffer.concat(chunks).toString('utf8') }))
      req.once('close', () => resolve({ aborted: true })) // after 'end' this is a no-op
      req.once('error', () => resolve({ aborted: true }))
    })

  /** GET /metrics, for a token holder: `metrics()` gives { contentType, text }, or null without prom-client. */
  const serveMetrics = async (req, res) => {
    if (tokenIdOf(req) < 0) return send(res, 401, 'Unauthorized: a valid bearer token is required\n', { 'www-authenticate': 'Bearer realm="process-server"' })
    if (req.method !== 'GET') return send(res, 405, 'Method not allowed\n', { allow: 'GET' })
    const figures = await metrics()
    if (figures === null) return send(res, 501, 'Not Implemented: install prom-client for /metrics\n')
    send(res, 200, figures.text, { 'content-type': figures.contentType })
  }

  const handle = async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    // 1. Host (DNS rebinding), 2. Origin: before anything else, probes aside (answered by the drain).
    if (checkHost && !LOCAL_NAMES.has(hostnameOf(req.headers.host ?? '') ?? '')) return send(res, 403, 'Forbidden: Host not allowed\n')
    const origin = req.headers.origin
    if (origin !== undefined && !originAllowed(origin)) return send(res, 403, 'Forbidden: Origin not allowed\n')
    const cors = origin === undefined ? {} : { 'access-control-allow-origin': origin, vary: 'Origin' }
    for (const [k, v] of Object.entries(cors)) res.setHeader(k, v)
    if (origin !== undefined) res.setHeader('access-control-expose-headers', 'Mcp-Session-Id, WWW-Authenticate')
    if (url.pathname === METRICS_PATH) return serveMetrics(req, res)
    if (url.pathname !== MCP_PATH) return send(res, 404, 'Not Found\n')
    if (req.method === 'OPTIONS') {
      // A browser's preflight (it carries no credentials): what a request may send.
      res.writeHead(204, {
        'access-control-allow-methods': 'GET, POST, DELETE',
        'access-control-allow-headers': 'Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID',
        'access-control-max-age': '600',
      })
      return void res.end()
    }
    // 3. The token.
    const tokenId = tokenIdOf(req)
    if (tokenId < 0) {
      const bad = req.headers.authorization !== undefined
      return rpcError(res, 401, -32000, 'Unauthorized: a valid bearer token is required', {
        'www-authenticate': bad ? 'Bearer realm="process-server", error="invalid_token"' : 'Bearer realm="process-server"',
      })
    }
    if (!['GET', 'POST', 'DELETE'].includes(req.method)) return rpcError(res, 405, -32000, 'Method not allowed.', { allow: 'GET, POST, DELETE' })
    // 4. The session: this token's own, or unknown.
    const sessionId = req.headers['mcp-session-id']
    let entry = null
    if (sessionId !== undefined) {
      entry = sessions.get(sessionId) ?? null
      if (entry === null || entry.tokenId !== tokenId) return rpcError(res, 404, -32001, 'Session not found')
    }
    if (req.method !== 'POST') {
      if (entry === null) return rpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required')
      begin(entry, res)
      return entry.transport.handleRequest(req, res)
    }
    // 5. The body: its size first, then its JSON.
    if (Number(req.headers['content-length']) > maxBodyBytes) return tooLarge(req, res)
    const body = await readBody(req)
    if (body.aborted) return void res.destroy()
    if (body.tooLarge) return tooLarge(req, res)
    let message
    try {
      message = JSON.parse(body.text)
    } catch {
      return rpcError(res, 400, -32700, 'Parse error: Invalid JSON')
    }
    const messages = Array.isArray(message) ? message : [message]
    if (entry === null) {
      if (!messages.some((m) => isInitializeRequest(m))) return rpcError(res, 400, -32000, 'Bad Request: no valid session id (initialize first)')
      entry = await newSession(tokenId)
    }
    begin(entry, res)
    // A call whose response stream the client closes before its result is cancelled, as if it had
    // sent notifications/cancelled: the SDK aborts the handler's signal, and run_command stops its
    // process. (A response the server ended itself, the drain's included, has finished first.)
    const ids = messages.filter((m) => m && typeof m.method === 'string' && m.id !== undefined && m.id !== null).map((m) => m.id)
    if (ids.length > 0) {
      const transport = entry.transport
      res.once('close', () => {
        if (res.writableFinished) return
        for (const requestId of ids) {
          transport.onmessage?.({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'the client closed the response stream' } })
        }
      })
    }
    return entry.transport.handleRequest(req, res, message)
  }

  const httpServer = createServer((req, res) => {
    handle(req, res).catch((err) => {
      process.stderr.write(`process-server: ${req.method} ${req.url}: ${err?.stack ?? err}\n`)
      if (!res.headersSent) rpcError(res, 500, -32603, 'Internal server error')
      else res.destroy()
    })
  })
  // The drain: new requests refused (503, -32099), calls in flight waited for up to the grace, the
  // abandoned ones answered with an error, the sessions' transports closed, one report line, exit.
  const drain = withHttpKeepalive(httpServer, {
    mcp: () => [...sessions.values()].map((s) => s.transport),
    readinessPath: '/readyz',
    livenessPath: '/livez',
    graceMs,
  })
  // Added after withHttpKeepalive's own hook, so it runs after it: the abandoned calls have had their
  // error response by then. (Given as the `onShutdown` option it would run first: stopping the
  // processes first lets those calls end with an ordinary result before the abandonment answer.)
  drain.keepalive.onShutdown(onShutdown)

  await new Promise((resolve, reject) => {
    httpServer.once('error', reject)
    httpServer.listen(port, host, () => {
      httpServer.off('error', reject)
      resolve()
    })
  })
  const address = httpServer.address()
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address
  process.stderr.write(`process-server: listening on http://${shown}:${address.port}${MCP_PATH}\n`)
  return { httpServer, drain, sessions }
}
