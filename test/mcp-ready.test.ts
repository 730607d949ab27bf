// Readiness of an MCP server (issue 31 item 3): 'starting' until its `initialize` was answered,
// through mcpPingHealthCheck as the ready check over the Client connected in the 'spawn' event.
// Real server fixture, real SDK client; every child tracked for the cleanup, every wait bounded.
import type { ChildProcess } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { mcpPingHealthCheck, type McpPingClient } from '../lib/mcp'
import { DIST } from './helpers'
import { fixtureServer, newClient, pipeTransport } from './mcp-sdk'
import { cleanupAfterEach } from './supervisor-cleanup'

const posix = process.platform !== 'win32'
const { supervise } = cleanupAfterEach()

describe.runIf(posix)('an MCP server is ready once its initialize is answered', () => {
  it("start() resolves after the client's connect; the record went starting -> running", async () => {
    const { sup } = supervise()
    const clients = new Map<ChildProcess, Promise<McpPingClient>>()
    const connected = new Set<number>()
    const readyWhenConnected: boolean[] = []
    sup.on('spawn', (_record, child) => {
      const client = newClient(1, { name: 'reapkit-ready-test', version: '1.0.0' })
      child.once('exit', () => void client.close().catch(() => {}))
      const connecting = client.connect(pipeTransport(1, child)).then(() => (connected.add(child.pid!), client))
      connecting.catch(() => {})
      clients.set(child, connecting)
    })
    sup.on('ready', (record) => readyWhenConnected.push(connected.has(record.pid)))
    const statuses: string[] = []
    sup.on('status', (r) => statuses.push(r.status))
    const record = await sup.start(process.execPath, [fixtureServer(1)], {
      requestId: 'mcp',
      stdio: ['pipe', 'pipe', 'inherit'],
      env: { ...process.env, REAPKIT_DIST: DIST },
      ready: { check: mcpPingHealthCheck(({ child }) => clients.get(child)), timeoutMs: 30_000 },
    })
    expect(record.status).toBe('running')
    expect(readyWhenConnected).toEqual([true])
    expect(statuses).toEqual(['starting', 'running'])
  })
})
