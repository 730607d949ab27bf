// The README's 2.x client side: reapkit's StdioClientTransport in place of the SDK's, and the
// mcpPingHealthCheck of a supervised server, as a user writes them in TypeScript.
import type { ChildProcess } from 'node:child_process'
import { Client } from '@modelcontextprotocol/client'
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio'
import { Supervisor } from 'reapkit'
import { mcpPingHealthCheck, StdioClientTransport, type StdioServerParameters } from 'reapkit/mcp'

const client = new Client({ name: 'my-host', version: '1.0.0' })
await client.connect(new StdioClientTransport({ command: 'node' }))
const params: StdioServerParameters = { command: 'npx', args: ['-y', '@modelcontextprotocol/server-memory'], env: { PATH: '/usr/bin' }, stderr: 'pipe' }
const transport = new StdioClientTransport(params, { closeTimeoutMs: 1000, graceMs: 1000 })
await client.connect(transport)
const pid: number | null = transport.pid
void pid
await client.listTools()
await client.close()

const sup = new Supervisor()
const clients = new Map<ChildProcess, Promise<Client>>() // each incarnation's child -> its connected Client
sup.on('spawn', (record, child) => {
  const { stdin, stdout } = child
  if (!stdin || !stdout) return
  const c = new Client({ name: 'my-host', version: '1.0.0' })
  stdin.on('error', () => {}) // a write to a child that has just died (EPIPE)
  child.once('exit', () => {
    clients.delete(child)
    void c.close()
  })
  const connected = c.connect(new StdioServerTransport(stdout, stdin)).then(() => c)
  connected.catch(() => {})
  clients.set(child, connected)
  void record.requestId
})
sup.spawn('uvx', ['mcp-server-fetch'], {
  requestId: 'fetch',
  stdio: ['pipe', 'pipe', 'inherit'],
  restart: 'on-failure',
  health: { check: mcpPingHealthCheck(({ child }) => clients.get(child)), intervalMs: 10_000, timeoutMs: 5000, failures: 3 },
})
// A Client given directly, for a child that is never restarted.
sup.spawn('node', ['server.mjs'], { health: { check: mcpPingHealthCheck(client) } })
// @ts-expect-error: the server's command is required
new StdioClientTransport({ args: ['server.js'] })
// @ts-expect-error: not a Client (no ping())
mcpPingHealthCheck({ name: 'my-host' })

await sup.shutdownAll()
sup.dispose()
