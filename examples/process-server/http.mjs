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
import { createServer } from 'node:http'
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js'
import { withHttpKeepalive } from 'reapkit/mcp'
import { readBody, rpcError, send, tooLarge } from './http-answers.mjs'
import { hostCheck, originCheck, tokenCheck } from './http-checks.mjs'
import { createSessions } from './http-sessions.mjs'

export { isLoopback, parseOrigins } from './http-checks.mjs'

export const MCP_PATH = '/mcp'
export const METRICS_PATH = '/metrics'

/**
 * Starts the HTTP mode: listens, prints `process-server: listening on http://HOST:PORT/mcp` on
 * stderr and returns the drain. `newServer()` makes one McpServer (tools registered) per session;
 * `tools.endSession(id)` stops a session's processes when it ends.
 */
export async function serveHttp(options) {
  const { port, host, tokens, allowOrigins, maxBodyBytes, sessionIdleMs, graceMs, newServer, tools, onShutdown, metrics } = options
  const sessions = createSessions({ newServer, tools, sessionIdleMs })
  const handle = requestHandler({ hostAllowed: hostCheck(host), originAllowed: originCheck(allowOrigins), tokenIdOf: tokenCheck(tokens), sessions, maxBodyBytes, metrics })
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
    mcp: () => [...sessions.byId.values()].map((s) => s.transport),
    readinessPath: '/readyz',
    livenessPath: '/livez',
    graceMs,
  })
  // Added after withHttpKeepalive's own hook, so it runs after it: the abandoned calls have had their
  // error response by then. (Given as the `onShutdown` option it would run first: stopping the
  // processes first lets those calls end with an ordinary result before the abandonment answer.)
  drain.keepalive.onShutdown(onShutdown)
  await listen(httpServer, port, host)
  const address = httpServer.address()
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address
  process.stderr.write(`process-server: listening on http://${shown}:${address.port}${MCP_PATH}\n`)
  return { httpServer, drain, sessions: sessions.byId }
}

function listen(httpServer, port, host) {
  return new Promise((resolve, reject) => {
    httpServer.once('error', reject)
    httpServer.listen(port, host, () => {
      httpServer.off('error', reject)
      resolve()
    })
  })
}

/** The request handler: the checks in order (see the top of this file), then the SDK's transport. */
function requestHandler({ hostAllowed, originAllowed, tokenIdOf, sessions, maxBodyBytes, metrics }) {
  /** GET /metrics, for a token holder: `metrics()` gives { contentType, text }, or null without prom-client. */
  const serveMetrics = async (req, res) => {
    if (tokenIdOf(req) < 0) return send(res, 401, 'Unauthorized: a valid bearer token is required\n', { 'www-authenticate': 'Bearer realm="process-server"' })
    if (req.method !== 'GET') return send(res, 405, 'Method not allowed\n', { allow: 'GET' })
    const figures = await metrics()
    if (figures === null) return send(res, 501, 'Not Implemented: install prom-client for /metrics\n')
    send(res, 200, figures.text, { 'content-type': figures.contentType })
  }

  /** 1. Host (DNS rebinding), 2. Origin; the CORS headers an allowed origin gets. False: answered (403). */
  const admitted = (req, res) => {
    if (!hostAllowed(req)) return void send(res, 403, 'Forbidden: Host not allowed\n')
    const origin = req.headers.origin
    if (origin === undefined) return true
    if (!originAllowed(origin)) return void send(res, 403, 'Forbidden: Origin not allowed\n')
    res.setHeader('access-control-allow-origin', origin)
    res.setHeader('vary', 'Origin')
    res.setHeader('access-control-expose-headers', 'Mcp-Session-Id, WWW-Authenticate')
    return true
  }

  /** A browser's preflight (it carries no credentials): what a request may send. */
  const preflight = (res) => {
    res.writeHead(204, {
      'access-control-allow-methods': 'GET, POST, DELETE',
      'access-control-allow-headers': 'Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID',
      'access-control-max-age': '600',
    })
    res.end()
  }

  /** 5. The body: its size first, then its JSON. { messages, message } or null (answered). */
  const parsedBody = async (req, res) => {
    if (Number(req.headers['content-length']) > maxBodyBytes) return void tooLarge(req, res, maxBodyBytes)
    const body = await readBody(req, maxBodyBytes)
    if (body.aborted) return void res.destroy()
    if (body.tooLarge) return void tooLarge(req, res, maxBodyBytes)
    try {
      const message = JSON.parse(body.text)
      return { message, messages: Array.isArray(message) ? message : [message] }
    } catch {
      return void rpcError(res, 400, -32700, 'Parse error: Invalid JSON')
    }
  }

  /**
   * A call whose response stream the client closes before its result is cancelled, as if it had
   * sent notifications/cancelled: the SDK aborts the handler's signal, and run_command stops its
   * process. (A response the server ended itself, the drain's included, has finished first.)
   */
  const cancelOnClose = (entry, res, messages) => {
    const ids = messages.filter((m) => m && typeof m.method === 'string' && m.id !== undefined && m.id !== null).map((m) => m.id)
    if (ids.length === 0) return
    const transport = entry.transport
    res.once('close', () => {
      if (res.writableFinished) return
      for (const requestId of ids) {
        transport.onmessage?.({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'the client closed the response stream' } })
      }
    })
  }

  return async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    // Before anything else, probes aside (answered by the drain).
    if (!admitted(req, res)) return
    if (url.pathname === METRICS_PATH) return serveMetrics(req, res)
    if (url.pathname !== MCP_PATH) return send(res, 404, 'Not Found\n')
    if (req.method === 'OPTIONS') return preflight(res)
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
      entry = sessions.find(sessionId, tokenId)
      if (entry === null) return rpcError(res, 404, -32001, 'Session not found')
    }
    if (req.method !== 'POST') {
      if (entry === null) return rpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required')
      sessions.begin(entry, res)
      return entry.transport.handleRequest(req, res)
    }
    const body = await parsedBody(req, res)
    if (!body) return
    if (entry === null) {
      if (!body.messages.some((m) => isInitializeRequest(m))) return rpcError(res, 400, -32000, 'Bad Request: no valid session id (initialize first)')
      entry = await sessions.open(tokenId)
    }
    sessions.begin(entry, res)
    cancelOnClose(entry, res, body.messages)
    return entry.transport.handleRequest(req, res, body.message)
  }
}
