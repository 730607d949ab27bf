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
import type { Server } from 'node:http'
import { createKeepalive, type Keepalive, type KeepaliveOptions } from '../../index'
import { Connections } from './connections'
import type { HttpDrain } from './context'
import { Exchanges } from './exchanges'
import { resolveOptions } from './options'
import { installPhases, reportFields } from './phases'
import { startProbeServer } from './probe'
import { hookRequests } from './requests'

export { HTTP_DRAIN_GRACE_MS_DEFAULT } from './options'

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

/**
 * Puts an HTTP server (node:http, https, or Express's app.listen()) under a keepalive drain. Call it
 * once, right after creating the server (it takes the requests from then on). Returns the drain.
 * On node:http and https, the server builds its requests from then on from a subclass (of the same
 * name) of its IncomingMessage class, through which the drain sees each POST body.
 */
// Its steps are in lib/mcp/http/: options, requests (and the body tee), exchanges, answers, phases.
export function withHttpKeepalive(server: Server, options: HttpKeepaliveOptions = {}): HttpKeepalive {
  const resolved = resolveOptions(server, options)
  const { settings } = resolved
  const keepalive = resolved.own === null ? resolved.keepalive : createKeepalive(resolved.own) // checks the rest, before the server is touched
  const drain: HttpDrain = {
    server,
    keepalive,
    settings,
    exchanges: new Exchanges(keepalive),
    connections: new Connections(server),
    probeServer: null,
    listenerClosed: false,
    refused: 0,
    counts: { sessionsAtTrigger: 0, streamsEnded: 0, connectionsClosed: 0 },
  }
  hookRequests(drain)
  if (settings.probePort !== undefined) drain.probeServer = startProbeServer(drain, settings.probePort, settings.probeHost)
  installPhases(drain)
  for (const hook of settings.hooks) keepalive.onShutdown(hook) // after the close: the streams end before the user's hooks run
  keepalive.extendReport(() => reportFields(drain))
  const { exchanges } = drain
  return {
    keepalive,
    probeServer: drain.probeServer,
    get stats() {
      return { calls: exchanges.count('call'), streams: exchanges.count('stream'), other: exchanges.count('other'), refused: drain.refused }
    },
    shutdown: (reason?: string) => keepalive.shutdown(reason),
  }
}
