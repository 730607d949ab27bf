// withKeepalive's `resource` option: reapkit://keepalive read by a real MCP SDK client from a real
// MCP SDK server over stdio, on both SDK lines (1.x @modelcontextprotocol/sdk, 2.x
// @modelcontextprotocol/client + server), before and during a real SIGTERM drain.
import { describe, expect, it } from 'vitest'
import { createKeepalive, type Keepalive, SHUTTING_DOWN_JSONRPC_CODE } from '../lib/index'
import { KEEPALIVE_RESOURCE_URI, type KeepaliveResourceState, withKeepalive } from '../lib/mcp'
import { exitOf } from './helpers'
import { connectFixture, McpServerV1, McpServerV2, SDK_LINES, ServerV1, ServerV2 } from './mcp-sdk'
import { childrenAfterEach } from './supervisor-cleanup'

const posix = process.platform !== 'win32'

// The servers the SDK's transport starts and the keepalives made, killed and disposed after each test, pass or fail.
const { children, keepalives } = childrenAfterEach()

describe.runIf(posix).each(SDK_LINES)('withKeepalive({ resource: true }) on the MCP SDK $line', (sdk) => {
  async function connect(env: Record<string, string>) {
    const { client, child, err } = await connectFixture(sdk, children, env)
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
