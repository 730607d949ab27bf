// The README's 2.x stateless Streamable HTTP server (createMcpHandler on node:http) under
// withHttpKeepalive, with its probes on a port of their own, as a user writes it in TypeScript.
//
// The cast is for the SDK, not reapkit: under exactOptionalPropertyTypes, toNodeHandler()'s request
// type (@modelcontextprotocol/node 2.1.2, `method?: string` without `undefined`) does not take
// node:http's IncomingMessage, so http.createServer(toNodeHandler(handler)) does not compile there.
import http from 'node:http'
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server'
import { toNodeHandler } from '@modelcontextprotocol/node'
import { withHttpKeepalive } from 'reapkit/mcp'

const makeServer = (): McpServer => new McpServer({ name: 'http', version: '1.0.0' })
const handler = createMcpHandler(() => makeServer())
const listener = toNodeHandler(handler) as http.RequestListener
const server = http.createServer(listener).listen(3000)
withHttpKeepalive(server, { mcp: handler, readinessPath: '/readyz' })
const drain = withHttpKeepalive(http.createServer(listener).listen(3001), { mcp: handler, probePort: 8081, graceMs: 20_000, stopAccepting: 'at-drain' })
drain.probeServer?.close()
await drain.shutdown('test')
