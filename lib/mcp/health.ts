/**
 * reapkit/mcp's health check for supervised MCP servers: an MCP `ping` (the protocol's own liveness
 * request, which every server answers with an empty result) sent by the SDK Client connected to
 * that child, over that child's transport.
 *
 * The Supervisor runs it on its schedule (`health: { check, intervalMs, timeoutMs, failures }`)
 * and aborts the check's signal when it outlasts `timeoutMs`; the signal goes to the SDK's request,
 * so a ping to a wedged server is cancelled (1.x and 2.x send `notifications/cancelled`) rather than
 * left waiting for the SDK's own 60 s request timeout. A server that still holds its pipes but no
 * longer reads them, or no longer answers, fails every ping: no exit would ever report it.
 *
 * It needs no import of the SDK: a Client of either line has `ping(options)`, with `signal` among
 * its RequestOptions.
 */
import type { ChildProcess } from 'node:child_process'
import { typeError } from '../ground/errors'
import { describe } from '../ground/validate'
import { AbortError, type HealthCheckContext, ReapkitError } from '../index'

/** What the check needs of an SDK Client (1.x `@modelcontextprotocol/sdk`, 2.x `@modelcontextprotocol/client`). */
export interface McpPingClient {
  ping(options?: { signal?: AbortSignal | undefined; timeout?: number | undefined }): Promise<unknown>
}

/**
 * The client to ping for one check: a Client, or a function of the check's context (the child of
 * the incarnation being checked, its record) that returns the Client connected to that child, or a
 * promise of it (e.g. the connection still being made), or undefined/null when there is none.
 */
export type McpPingClientSource =
  | McpPingClient
  | ((context: { child: ChildProcess; record: HealthCheckContext['record'] }) => McpPingClient | null | undefined | PromiseLike<McpPingClient | null | undefined>)

/**
 * A Supervisor health check that sends an MCP `ping` through `client` and succeeds when the server
 * answers. It fails (the Supervisor counts a failure) when the ping gets an error or no answer
 * before the check's timeout, when no client is connected to the child being checked
 * (`ERR_REAPKIT_MCP_NO_CLIENT`), and, for a Client given directly, when the child checked is not
 * the first one it checked (`ERR_REAPKIT_MCP_STALE_CLIENT`).
 *
 * Pass a function when the child is restarted: each incarnation is a new process with new pipes,
 * so the check must ping the Client connected to the child it is given, not the last one's.
 */
export function mcpPingHealthCheck(client: McpPingClientSource): (context: HealthCheckContext) => Promise<void> {
  if (typeof client !== 'function' && !isPingClient(client)) {
    throw typeError('ERR_INVALID_ARG_TYPE', `The "client" argument must be an MCP SDK Client (with a ping() method) or a function that returns one. Received ${describe(client)}`)
  }
  const source = typeof client === 'function' ? client : oneChild(client)
  return async (context) => {
    const { child, record, signal } = context
    // An aborted check asks nothing of the host's source (which may start a connection).
    signal.throwIfAborted()
    const found = await untilAborted(source({ child, record }), signal)
    if (!isPingClient(found)) {
      throw new ReapkitError('ERR_REAPKIT_MCP_NO_CLIENT', `No MCP client is connected to pid ${child.pid} to ping (the client source gave ${found == null ? 'none' : describe(found)})`)
    }
    await found.ping({ signal })
  }
}

/**
 * The source for a Client given directly: it is connected to one child, the first one checked. A
 * restarted child would be pinged over that child's closed Client ("Not connected"), a healthy
 * server stopped as unhealthy and restarted forever: a different child fails with its own code.
 * (A WeakRef: the check does not keep a gone child alive; once collected, no child matches it.)
 */
function oneChild(client: McpPingClient) {
  let first: WeakRef<ChildProcess> | undefined
  return ({ child }: { child: ChildProcess }): McpPingClient => {
    first ??= new WeakRef(child)
    if (first.deref() !== child) {
      throw new ReapkitError(
        'ERR_REAPKIT_MCP_STALE_CLIENT',
        `A Client given directly to mcpPingHealthCheck pings one child (the first one checked), not pid ${child.pid}: pass a function that returns the Client connected to the child it is given when the child is restarted`,
      )
    }
    return client
  }
}

function isPingClient(value: unknown): value is McpPingClient {
  return typeof value === 'object' && value !== null && typeof (value as McpPingClient).ping === 'function'
}

/** A value or promise, awaited no longer than `signal` allows (a connection that never completes must not hold the check). */
async function untilAborted<T>(value: T | PromiseLike<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted() // aborted while the source ran
  if (!isThenable(value)) return value
  let onAbort: (() => void) | undefined
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new AbortError('The health check was aborted while waiting for the MCP client', { cause: signal.reason }))
    signal.addEventListener('abort', onAbort, { once: true })
  })
  try {
    return await Promise.race([value, aborted])
  } finally {
    signal.removeEventListener('abort', onAbort!)
  }
}

function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as PromiseLike<T> | null)?.then === 'function'
}
