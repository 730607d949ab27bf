// The README's 1.x server, as a user writes it in TypeScript: McpServer and the low-level Server
// under withKeepalive, connected to the SDK's own stdio transport.
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { createKeepalive } from 'reapkit'
import { KEEPALIVE_RESOURCE_URI, type KeepaliveResourceState, type McpTransport, withKeepalive } from 'reapkit/mcp'

const server = withKeepalive(new McpServer({ name: 'my-server', version: '1.0.0' }), createKeepalive())
server.registerTool('echo', { description: 'echo' }, async () => ({ content: [{ type: 'text', text: 'hi' }] }))
await server.connect(new StdioServerTransport())

const withResource = withKeepalive(new McpServer({ name: 'my-server', version: '1.0.0' }), createKeepalive({ graceMs: 5000 }), { resource: true })
await withResource.connect(new StdioServerTransport())

// The SDK's transport is an McpTransport as it is.
const transport: McpTransport = new StdioServerTransport()
void transport

const lowLevel = withKeepalive(new Server({ name: 'low', version: '1.0.0' }, { capabilities: {} }), createKeepalive())
await lowLevel.connect(new StdioServerTransport())

// @ts-expect-error: not an MCP server
withKeepalive({ name: 'my-server' }, createKeepalive())
// @ts-expect-error: resource is a boolean
withKeepalive(new McpServer({ name: 'my-server', version: '1.0.0' }), createKeepalive(), { resource: 'yes' })

// What a host reads at reapkit://keepalive.
export function describeState(uri: typeof KEEPALIVE_RESOURCE_URI, state: KeepaliveResourceState): string {
  return `${uri}: ${state.state}, ${state.inFlight} in flight`
}
