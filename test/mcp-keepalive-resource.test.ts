// withKeepalive's `resource` option: reapkit://keepalive read by a real MCP SDK client from a real
// MCP SDK server over stdio, on both SDK lines (1.x @modelcontextprotocol/sdk, 2.x
// @modelcontextprotocol/client + server), before and during a real SIGTERM drain.
import { Client as ClientV2 } from '@modelcontextprotocol/client'
import { StdioClientTransport as StdioClientTransportV2 } from '@modelcontextprotocol/client/stdio'
import { McpServer as McpServerV2, Server as ServerV2 } from '@modelcontextprotocol/server'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport as StdioClientTransportV1 } from '@modelcontextprotocol/sdk/client/stdio.js'
import { Server as ServerV1 } from '@modelcontextprotocol/sdk/server/index.js'
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { ChildProcess } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import { createKeepalive, type Keepalive, SHUTTING_DOWN_JSONRPC_CODE } from '../lib/index'
import { KEEPALIVE_RESOURCE_URI, type KeepaliveResourceState, withKeepalive } from '../lib/mcp'
import { DIST, exitOf, FIXTURES, jsonLines } from './helpers'

const posix = process.platform !== 'win32'

interface SdkClient {
  connect(transport: unknown): Promise<void>
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown>
  getServerCapabilities(): { resources?: unknown } | undefined
  listResources(): Promise<{ resources: Array<{ uri: string; mimeType?: string }> }>
  readResource(params: { uri: string }): Promise<{ contents: Array<{ uri: string; mimeType?: string; text?: string }> }>
  close(): Promise<void>
}

const LINES = [
  {
    line: '1.x',
    server: 'mcp-server.mjs',
    newClient: (): SdkClient => new ClientV1({ name: 'reapkit-test', version: '1.0.0' }) as unknown as SdkClient,
    SdkTransport: StdioClientTransportV1 as unknown as typeof StdioClientTransportV2,
  },
  {
    line: '2.x',
    server: 'mcp-server-v2.mjs',
    newClient: (): SdkClient => new ClientV2({ name: 'reapkit-test', version: '1.0.0' }) as unknown as SdkClient,
    SdkTransport: StdioClientTransportV2,
  },
]

// The servers the SDK's transport starts, killed after each test, pass or fail (no-op once reaped).
const children = new Set<ChildProcess>()
const keepalives = new Set<Keepalive>()
afterEach(async () => {
  for (const k of keepalives) k.dispose()
  keepalives.clear()
  for (const child of children) {
    child.kill('SIGKILL')
    await exitOf(child, 5000).catch(() => {})
  }
  children.clear()
})

describe.runIf(posix).each(LINES)('withKeepalive({ resource: true }) on the MCP SDK $line', (sdk) => {
  async function connect(env: Record<string, string>) {
    const transport = new sdk.SdkTransport({
      command: process.execPath,
      args: [`${FIXTURES}/${sdk.server}`],
      env: { ...(process.env as Record<string, string>), REAPKIT_DIST: DIST, ...env },
      stderr: 'pipe',
    })
    const start = transport.start.bind(transport)
    transport.start = async () => {
      const started = start()
      children.add((transport as unknown as { _process: ChildProcess })._process)
      return started
    }
    const err = jsonLines(transport.stderr as import('node:stream').Readable)
    const client = sdk.newClient()
    await client.connect(transport)
    const child = (transport as unknown as { _process: ChildProcess })._process
    // `uri`: any spelling the SDK takes for the resource (it looks it up by `new URL(uri).href`).
    const read = async (uri = KEEPALIVE_RESOURCE_URI): Promise<KeepaliveResourceState> => {
      const { contents } = await client.readResource({ uri })
      expect(contents).toHaveLength(1)
      expect(contents[0]).toMatchObject({ uri: KEEPALIVE_RESOURCE_URI, mimeType: 'application/json' })
      return JSON.parse(contents[0]!.text!)
    }
    return { client, child, err, read }
  }

  it('the host reads the drain state: running, then draining with the call in flight, while new work is refused', async () => {
    const { client, child, err, read } = await connect({ KEEPALIVE_RESOURCE: '1' })
    expect(client.getServerCapabilities()?.resources).toBeDefined()
    const { resources } = await client.listResources()
    expect(resources).toContainEqual(expect.objectContaining({ uri: KEEPALIVE_RESOURCE_URI, mimeType: 'application/json' }))
    // initialize and resources/list were served; the reads themselves are not work
    expect(await read()).toEqual({ state: 'running', reason: null, inFlight: 0, served: 2, drained: 0, refused: 0, abandoned: 0, drainMs: null })
    const slow = client.callTool({ name: 'slow', arguments: { ms: 3000 } })
    slow.catch(() => {})
    await err.next((m) => m.event === 'slow-start', 10_000, 'the slow call to start')
    expect(await read()).toMatchObject({ state: 'running', inFlight: 1, served: 2 })
    child.kill('SIGTERM')
    // Read until the signal is handled (bounded); the slow call still has more than a second to go.
    let during = await read()
    for (const deadline = Date.now() + 10_000; during.state === 'running' && Date.now() < deadline; during = await read()) {
      await new Promise((r) => setTimeout(r, 20))
    }
    expect(during).toMatchObject({ state: 'draining', reason: 'SIGTERM', inFlight: 1, served: 2, refused: 0 })
    expect(during.drainMs).toBeGreaterThanOrEqual(0)
    await expect(client.callTool({ name: 'quick', arguments: {} })).rejects.toMatchObject({ code: SHUTTING_DOWN_JSONRPC_CODE })
    expect(await read()).toMatchObject({ state: 'draining', inFlight: 1, refused: 1 })
    // The scheme in capitals reaches the same resource: a read too, answered and not refused.
    expect(await read('REAPKIT://keepalive')).toMatchObject({ state: 'draining', inFlight: 1, refused: 1 })
    expect(await slow).toMatchObject({ content: [{ type: 'text', text: 'slept 3000' }] })
    expect(await exitOf(child)).toEqual({ code: 0, signal: null })
    // The report agrees: the reads were neither served nor refused.
    expect(err.seen.at(-1)).toMatchObject({ event: 'shutdown', reason: 'SIGTERM', served: 3, drained: 1, refused: 1, abandoned: 0 })
    await client.close().catch(() => {})
  })

  it('off by default: no resources capability, nothing listed, the read is not answered', async () => {
    const { client, child } = await connect({})
    expect(client.getServerCapabilities()?.resources).toBeUndefined()
    // 1.x's client asks and gets "method not found"; 2.x's answers an empty list itself.
    const listed = await client.listResources().catch(() => ({ resources: [] }))
    expect(listed.resources).toEqual([])
    await expect(client.readResource({ uri: KEEPALIVE_RESOURCE_URI })).rejects.toBeTruthy()
    await client.close().catch(() => {})
    expect(await exitOf(child)).toEqual({ code: 0, signal: null })
  })
})

describe('withKeepalive resource option: checked before anything is registered', () => {
  const keepalive = (): Keepalive => {
    const k = createKeepalive({ exit: false, signals: false, stdin: false, parentDeath: false, finalLine: false })
    keepalives.add(k)
    return k
  }
  it('a low-level Server, or a non-boolean, is refused with a code', () => {
    for (const server of [new ServerV1({ name: 'x', version: '1' }), new ServerV2({ name: 'x', version: '1' })]) {
      expect(() => withKeepalive(server, keepalive(), { resource: true })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
    }
    expect(() => withKeepalive(new McpServerV1({ name: 'x', version: '1' }), keepalive(), { resource: 'yes' as never })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }),
    )
    // An McpServer of either line takes it.
    expect(() => withKeepalive(new McpServerV1({ name: 'x', version: '1' }), keepalive(), { resource: true })).not.toThrow()
    expect(() => withKeepalive(new McpServerV2({ name: 'x', version: '1' }), keepalive(), { resource: true })).not.toThrow()
  })
})
