// The README's 1.x Streamable HTTP server (sessions: a Map of session transports, as the SDK's
// examples keep them) under withHttpKeepalive, as a user writes it in TypeScript. On node:http
// (Express's app.listen() returns the same Server; its types are not among the devDependencies).
import { randomUUID } from 'node:crypto'
import http from 'node:http'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { withHttpKeepalive } from 'reapkit/mcp'

const transports = new Map<string, StreamableHTTPServerTransport>()
const server = http
  .createServer(async (req, res) => {
    const id = req.headers['mcp-session-id']
    let transport = typeof id === 'string' ? transports.get(id) : undefined
    if (!transport) {
      const created = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (sid) => void transports.set(sid, created) })
      await new McpServer({ name: 'http', version: '1.0.0' }).connect(created)
      transport = created
    }
    await transport.handleRequest(req, res)
  })
  .listen(3000)
const drain = withHttpKeepalive(server, { mcp: transports, readinessPath: '/readyz', livenessPath: '/livez' })
const sessions = new Map<string, { transport: StreamableHTTPServerTransport; user: string }>()
withHttpKeepalive(http.createServer().listen(3001), { mcp: () => [...sessions.values()].map((s) => s.transport), keepalive: drain.keepalive })
const calls: number = drain.stats.calls
void calls
