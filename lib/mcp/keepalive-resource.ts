/**
 * The keepalive's state as an MCP resource (withKeepalive's `resource` option): `reapkit://keepalive`,
 * a JSON document the host reads with resources/read, to see whether the server drains and how much
 * work it holds before it chooses when to restart it.
 *
 * Registered through McpServer.registerResource, which both SDK lines share (1.x
 * @modelcontextprotocol/sdk and 2.x @modelcontextprotocol/server), so no SDK import is needed. A
 * read of it is not work: it is never counted in flight, and it is answered while the server drains
 * (when every other request is refused), which is when a host wants it.
 */
import type { Keepalive, KeepaliveMetrics } from '../index'
import type { JsonRpcMessage } from './types'

export const KEEPALIVE_RESOURCE_URI = 'reapkit://keepalive'

/** What a read of the resource returns (its text, parsed): keepalive.metrics() without the histogram. */
export type KeepaliveResourceState = Omit<KeepaliveMetrics, 'runDurationMs'>

/** The part of McpServer (1.x and 2.x alike) this module uses. */
interface ResourceRegistrar {
  registerResource(
    name: string,
    uri: string,
    config: { title?: string; description?: string; mimeType?: string },
    read: (uri: URL) => { contents: Array<{ uri: string; mimeType: string; text: string }> },
  ): unknown
}

export function canRegisterResources(server: object): server is ResourceRegistrar {
  return typeof (server as Partial<ResourceRegistrar>).registerResource === 'function'
}

export function registerKeepaliveResource(server: ResourceRegistrar, keepalive: Keepalive): void {
  server.registerResource(
    'reapkit-keepalive',
    KEEPALIVE_RESOURCE_URI,
    {
      title: 'Server drain state',
      description: 'Whether this server is draining before it exits, and the work it holds (reapkit keepalive).',
      mimeType: 'application/json',
    },
    (uri) => ({ contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(resourceState(keepalive)) }] }),
  )
}

function resourceState(keepalive: Keepalive): KeepaliveResourceState {
  const { state, reason, inFlight, served, drained, refused, abandoned, drainMs } = keepalive.metrics()
  return { state, reason, inFlight, served, drained, refused, abandoned, drainMs }
}

/** A read of the keepalive resource: passed to the server untracked, even while draining. */
export function readsKeepaliveResource(message: JsonRpcMessage): boolean {
  return message.method === 'resources/read' && normalisedUri(message.params?.uri) === KEEPALIVE_RESOURCE_URI
}

/**
 * The URI as McpServer looks it up (`new URL(uri).toString()`), so every spelling that reaches the
 * resource (`REAPKIT://keepalive`) is a read of it here too; one that is no URL at all is not.
 */
function normalisedUri(uri: unknown): string | null {
  if (uri === undefined) return null
  try {
    return new URL(String(uri)).href
  } catch {
    return null
  }
}
