// A real MCP SDK client against a real MCP SDK server over stdio, the server drained by reapkit.
// Every scenario runs against both lines of the official SDK: 1.x (@modelcontextprotocol/sdk) and
// 2.x (@modelcontextprotocol/client + @modelcontextprotocol/server), each client with a server of
// its own line (fixtures mcp-server.mjs and mcp-server-v2.mjs: same tools, same knobs).
import type { ChildProcess } from 'node:child_process'
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest'
import { groupMembers, type Keepalive, SHUTTING_DOWN_JSONRPC_CODE } from '../lib/index'
import { type McpTransport, StdioClientTransport as ReapkitTransport, type StdioServerParameters, withKeepalive } from '../lib/mcp'
import { DIST, exitOf, FIXTURES, isGone, jsonLines, killChildren, spawnFixture, trackGroup, waitFor } from './helpers'
import {
  ClientV1,
  ClientV2,
  connectFixture,
  McpServerV1,
  McpServerV2,
  SDK_LINES,
  ServerV1,
  ServerV2,
  StdioClientTransportV1,
  StdioClientTransportV2,
  StdioServerTransportV1,
  StdioServerTransportV2,
} from './mcp-sdk'

const linux = process.platform === 'linux'

// The SDK's StdioClientTransport starts the server as a plain child of this test process, outside
// any group the shared cleanup knows: these are killed here after each test, pass or fail, by their
// ChildProcess (a no-op once reaped: never a recycled pid).
const sdkChildren = new Set<ChildProcess>()
afterEach(async () => {
  expect(await killChildren(sdkChildren), 'SDK-started servers that survived SIGKILL').toEqual([])
})

/** Registers the group reapkit's transport starts for the shared cleanup, from the moment it is spawned. */
function trackReapkitTransport(transport: ReapkitTransport): ReapkitTransport {
  const start = transport.start.bind(transport)
  transport.start = () => {
    const started = start()
    if (transport.pid !== null) trackGroup(transport.pid) // its own group: pgid = pid
    return started
  }
  return transport
}

describe.each(SDK_LINES)('withKeepalive on the MCP SDK $line (real client, real server, stdio)', (sdk) => {
  async function connect(env: Record<string, string> = {}) {
    const { client, child, err } = await connectFixture(sdk, sdkChildren, env)
    /** The last line on the server's stderr, parsed (the report, once it has exited). */
    const lastLine = () => err.seen[err.seen.length - 1]
    return { client, child, err, lastLine }
  }

  it('SIGTERM mid-call: the call completes, a later call gets -32099, exit 0, report drained 1', async () => {
    const { client, child, err, lastLine } = await connect()
    const slow = client.callTool({ name: 'slow', arguments: { ms: 1500 } })
    slow.catch(() => {}) // awaited below; a failure before then must not be unhandled
    await err.next((m) => m.event === 'slow-start', 10_000, 'the slow call to start')
    child.kill('SIGTERM')
    await new Promise((r) => setTimeout(r, 200)) // the signal is handled; the slow call has >1 s to go
    await expect(client.callTool({ name: 'quick', arguments: {} })).rejects.toMatchObject({ code: SHUTTING_DOWN_JSONRPC_CODE })
    expect(await slow).toMatchObject({ content: [{ type: 'text', text: 'slept 1500' }] })
    expect(await exitOf(child)).toEqual({ code: 0, signal: null })
    // served: initialize and slow; quick was refused
    expect(lastLine()).toMatchObject({ event: 'shutdown', reason: 'SIGTERM', served: 2, drained: 1, abandoned: 0, refused: 1 })
    await client.close().catch(() => {})
  })

  it('the client closes stdin: the server drains and leaves at once (the SDK alone would not notice)', async () => {
    const { client, child, lastLine } = await connect()
    await client.callTool({ name: 'quick', arguments: {} })
    const t0 = Date.now()
    await client.close() // stdin end; the SDK waits up to 2 s before it would send SIGTERM
    expect(await exitOf(child)).toEqual({ code: 0, signal: null })
    expect(Date.now() - t0).toBeLessThan(1900) // it left on stdin end, before any signal
    expect(lastLine()).toMatchObject({ event: 'shutdown', reason: 'stdin-end', served: 2, abandoned: 0 }) // initialize, quick
  })

  it('stdin ends mid-call: the call is still answered, exit 0, report drained 1', async () => {
    // 2.x's StdioServerTransport closes itself on stdin end and would abort the call unanswered.
    const { client, child, err, lastLine } = await connect()
    const slow = client.callTool({ name: 'slow', arguments: { ms: 1000 } })
    slow.catch(() => {})
    await err.next((m) => m.event === 'slow-start', 10_000, 'the slow call to start')
    child.stdin!.end() // the host ends stdin and keeps reading stdout
    expect(await slow).toMatchObject({ content: [{ type: 'text', text: 'slept 1000' }] })
    expect(await exitOf(child)).toEqual({ code: 0, signal: null })
    expect(lastLine()).toMatchObject({ event: 'shutdown', reason: 'stdin-end', served: 2, drained: 1, abandoned: 0 })
    await client.close().catch(() => {})
  })

  // The host is a real SDK host (mcp-host.mjs, the SDK's own transport): when it dies, the server
  // loses its parent and its stdin at the same moment. Linux only, as the keepalive's own test.
  async function hostKilledMidCall(env: Record<string, string>) {
    const host = spawnFixture('mcp-host.mjs', [sdk.arg, 'sdk'], { stdio: ['ignore', 'pipe', 'pipe'], env })
    const out = jsonLines(host.stdout!)
    const err = jsonLines(host.stderr!) // the server's stderr too
    const { serverPid } = await out.next((m) => m.event === 'connected', 15_000, 'the host to connect')
    await err.next((m) => m.event === 'slow-start', 10_000, 'the slow call to start')
    host.kill('SIGKILL')
    expect(await exitOf(host, 5000)).toEqual({ code: null, signal: 'SIGKILL' })
    // It exits by itself (a zombie under its new parent counts as gone: PID 1 here reaps lazily).
    await waitFor(() => isGone(serverPid), 10_000, 'the server to exit')
    const report = await err.next((m) => m.event === 'shutdown', 5000, 'the report')
    expect(err.seen[err.seen.length - 1]).toEqual(report) // its last line
    return report
  }

  it.runIf(linux)('the host is SIGKILLed mid-call: the server notices its parent died, drains and exits', async () => {
    // The keepalive's stdin trigger off, so that the parent's death is the only way to notice.
    const report = await hostKilledMidCall({ IGNORE_EOF: '1', SLOW_MS: '1000' })
    expect(report).toMatchObject({ reason: 'parent-death', served: 2, drained: 1, abandoned: 0 })
  })

  it.runIf(linux)('the host is SIGKILLed mid-call, default keepalive: drains and exits on stdin end or parent death', async () => {
    // Both triggers fire together (the kernel closes the host's pipes as it dies): either may win.
    const report = await hostKilledMidCall({ SLOW_MS: '1000' })
    expect(report).toMatchObject({ served: 2, drained: 1, abandoned: 0 })
    expect(['stdin-end', 'parent-death']).toContain(report.reason)
  })
})

describe.each(SDK_LINES)('StdioClientTransport from reapkit/mcp under the SDK $line Client (unchanged)', (sdk) => {
  it('works as a drop-in, and closes a server behind sh -c that ignores stdin end with no survivors', async () => {
    const transport = trackReapkitTransport(
      new ReapkitTransport(
        {
          command: 'sh',
          args: ['-c', `"${process.execPath}" "${FIXTURES}/${sdk.server}"; :`],
          env: { REAPKIT_DIST: DIST, IGNORE_EOF: '1' },
          stderr: 'pipe',
        },
        { closeTimeoutMs: 300, graceMs: 5000 },
      ),
    )
    const err = jsonLines(transport.stderr as import('node:stream').Readable)
    const client = sdk.newClient()
    await client.connect(transport)
    const pgid = transport.pid!
    expect(groupMembers(pgid).length).toBe(2) // sh and the real server, in their own group
    expect(await client.callTool({ name: 'quick', arguments: {} })).toMatchObject({ content: [{ text: 'quick' }] })
    const t0 = Date.now()
    await client.close()
    const elapsed = Date.now() - t0
    expect(groupMembers(pgid)).toEqual([]) // the real server too, not only sh
    expect(elapsed).toBeLessThan(4000) // the SDK's own close takes 4 s here and leaves the server running
    // The group's SIGTERM also kills sh, the server's parent: whichever the server notices first is
    // its reason (an idle server may be gone before its SIGTERM handler runs).
    const report = await err.next((m) => m.event === 'shutdown', 5000, 'the report')
    expect(report).toMatchObject({ abandoned: 0 })
    expect(['SIGTERM', 'parent-death']).toContain(report.reason)
  })

  it('a host on it closes the server behind sh -c and then exits by itself', async () => {
    const host = spawnFixture('mcp-host.mjs', [sdk.arg, 'reapkit'], { stdio: ['ignore', 'pipe', 'inherit'] })
    const out = jsonLines(host.stdout!)
    const { pgid } = await out.next((m) => m.event === 'connected', 15_000, 'the host to connect')
    trackGroup(pgid)
    const closed = await out.next((m) => m.event === 'closed', 15_000, 'the client to close')
    expect(closed.elapsedMs).toBeLessThan(4000)
    expect(groupMembers(pgid)).toEqual([])
    expect(await exitOf(host, 10_000)).toEqual({ code: 0, signal: null }) // nothing of the server holds it
  })
})

describe('reapkit/mcp types against both lines (checked by npm run typecheck)', () => {
  it('takes the servers, transports and parameters of 1.x and 2.x without a cast', () => {
    // The drop-in claim: each line's Client takes reapkit's transport, withKeepalive takes each
    // line's McpServer and Server, and each line's StdioServerParameters are reapkit's.
    expectTypeOf<ReapkitTransport>().toMatchTypeOf<Parameters<ClientV1['connect']>[0]>()
    expectTypeOf<ReapkitTransport>().toMatchTypeOf<Parameters<ClientV2['connect']>[0]>()
    expectTypeOf<StdioServerTransportV1>().toMatchTypeOf<McpTransport>()
    expectTypeOf<StdioServerTransportV2>().toMatchTypeOf<McpTransport>()
    expectTypeOf<ConstructorParameters<typeof StdioClientTransportV1>[0]>().toMatchTypeOf<StdioServerParameters>()
    expectTypeOf<ConstructorParameters<typeof StdioClientTransportV2>[0]>().toMatchTypeOf<StdioServerParameters>()
    const wire = (k: Keepalive) => [
      withKeepalive(new McpServerV1({ name: 'x', version: '1' }), k),
      withKeepalive(new ServerV1({ name: 'x', version: '1' }), k),
      withKeepalive(new McpServerV2({ name: 'x', version: '1' }), k),
      withKeepalive(new ServerV2({ name: 'x', version: '1' }), k),
    ]
    expect(typeof wire).toBe('function')
  })
})

describe('StdioClientTransport from reapkit/mcp: maxBufferSize, as the SDK', () => {
  it('a message past maxBufferSize is an error, and the server is closed', async () => {
    const transport = trackReapkitTransport(
      // 2000 bytes and no newline, then idle: a message that never ends.
      new ReapkitTransport(
        { command: 'sh', args: ['-c', "printf '%02000d' 0; exec sleep 30"], maxBufferSize: 1000 },
        { closeTimeoutMs: 300, graceMs: 5000 },
      ),
    )
    const errors: Error[] = []
    let closed = false
    transport.onerror = (e) => errors.push(e)
    transport.onclose = () => (closed = true)
    transport.onmessage = () => errors.push(new Error('no message was expected'))
    await transport.start()
    const pgid = transport.pid!
    await waitFor(() => closed, 10_000, 'the transport to close')
    expect(errors.map((e) => e.message)).toEqual(['ReadBuffer exceeded maximum size of 1000 bytes'])
    expect(groupMembers(pgid)).toEqual([])
  })
})
