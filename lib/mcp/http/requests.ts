/**
 * Where each request goes: the drain sees every request before the server's handlers (through the
 * server's emit), tracks what it lets through and, while draining, refuses what would start new work.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { isSse } from './wire'
import { probeAnswer, refuse } from './answers'
import { BodyTee, teeByClass } from './body-tee'
import { draining, type HttpDrain } from './context'

/** The largest body kept to learn a request's id (bigger ones answer an abandoned call with id null). */
const BODY_MAX_BYTES = 1024 * 1024

const kDrained = Symbol('reapkit.httpKeepalive')

export const isDrained = (server: Server): boolean => (server as { [kDrained]?: true })[kDrained] === true

/** A long-lived stream: a GET SSE stream (1.x) or a subscriptions/listen POST (2.x, told by its Mcp-Method header). */
function isStream(req: IncomingMessage, method: string): boolean {
  if (method === 'GET') return isSse(req.headers.accept)
  if (method !== 'POST') return false
  const mcpMethod = req.headers['mcp-method']
  return mcpMethod !== undefined && String(mcpMethod).toLowerCase() === 'subscriptions/listen'
}

/** The server's own emit of 'request' (its handlers). */
type Pass = (req: IncomingMessage, res: ServerResponse) => void

/** Hands the request to the server's handlers; then the tee follows it if they changed its class. */
function pass(emitRequest: Pass, req: IncomingMessage, res: ServerResponse, body: BodyTee | null): void {
  emitRequest(req, res)
  body?.afterHandlers()
}

/**
 * Routes one request: answered here (a probe, a refusal), held until its body is known (draining),
 * or tracked and passed on to the server's handlers.
 */
function onRequest(drain: HttpDrain, emitRequest: Pass, req: IncomingMessage, res: ServerResponse): void {
  if (probeAnswer(drain, req, res)) return
  const method = req.method ?? 'GET'
  const stream = isStream(req, method)
  const body = method === 'POST' && !stream ? new BodyTee(req, BODY_MAX_BYTES) : null
  if (!draining(drain)) {
    drain.exchanges.track(res, stream ? 'stream' : method === 'POST' ? 'call' : 'other', body)
    return pass(emitRequest, req, res, body)
  }
  // Draining: nothing new starts; what belongs to the work in flight passes.
  res.shouldKeepAlive = false
  if (stream) return refuse(drain, req, res, null)
  if (body === null) {
    drain.exchanges.track(res, 'other', null)
    return pass(emitRequest, req, res, null)
  }
  // Held until the body says what it is (it stays in the stream's buffer for the SDK to read).
  void body.whenKnown().then(({ request, id }) => {
    if (request) return refuse(drain, req, res, id)
    drain.exchanges.track(res, 'other', body)
    pass(emitRequest, req, res, body)
  })
}

/** Puts the drain in front of the server's 'request' listeners (every other event passes untouched). */
export function hookRequests(drain: HttpDrain): void {
  const { server } = drain
  teeByClass(server)
  const emit = server.emit as (this: Server, event: string | symbol, ...args: unknown[]) => boolean
  const emitRequest: Pass = (req, res) => void emit.call(server, 'request', req, res)
  // Named parameters and `arguments` (not a rest array): the emit of every event costs no allocation.
  server.emit = function drainEmit(this: Server, event: string | symbol, req?: unknown, res?: unknown): boolean {
    if (event !== 'request') return emit.apply(this, arguments as unknown as [string | symbol, ...unknown[]])
    onRequest(drain, emitRequest, req as IncomingMessage, res as ServerResponse)
    return true
  } as Server['emit']
  Object.defineProperty(server, kDrained, { value: true })
}
