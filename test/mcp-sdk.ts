// The MCP SDK scaffolding the tests share, on both lines of the official SDK: 1.x
// (@modelcontextprotocol/sdk) and 2.x (@modelcontextprotocol/client + @modelcontextprotocol/server).
// The SDK's classes under one name per line, the two lines as one table (each with its fixture
// server: mcp-server.mjs and mcp-server-v2.mjs, same tools, same knobs), a Client connected over
// stdio to a server the SDK's own transport starts, and a transport over a child's own pipes.
import type { ChildProcess } from 'node:child_process'
import type { Readable } from 'node:stream'
import { Client as ClientV2 } from '@modelcontextprotocol/client'
import { StdioClientTransport as StdioClientTransportV2 } from '@modelcontextprotocol/client/stdio'
import { McpServer as McpServerV2, Server as ServerV2 } from '@modelcontextprotocol/server'
import { StdioServerTransport as StdioServerTransportV2 } from '@modelcontextprotocol/server/stdio'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport as StdioClientTransportV1, type StdioServerParameters } from '@modelcontextprotocol/sdk/client/stdio.js'
import { Server as ServerV1 } from '@modelcontextprotocol/sdk/server/index.js'
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport as StdioServerTransportV1 } from '@modelcontextprotocol/sdk/server/stdio.js'
import { DIST, FIXTURES, jsonLines } from './helpers'

export { ClientV1, ClientV2, McpServerV1, McpServerV2, ServerV1, ServerV2, StdioClientTransportV1, StdioClientTransportV2, StdioServerTransportV1, StdioServerTransportV2 }

export type LineNumber = 1 | 2

/** The part of either line's Client the tests use. */
export interface SdkClient {
  connect(transport: unknown): Promise<void>
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown>
  getServerCapabilities(): { resources?: unknown } | undefined
  listResources(): Promise<{ resources: Array<{ uri: string; mimeType?: string }> }>
  readResource(params: { uri: string }): Promise<{ contents: Array<{ uri: string; mimeType?: string; text?: string }> }>
  close(): Promise<void>
}

const TEST_CLIENT = { name: 'reapkit-test', version: '1.0.0' }

/** A Client of SDK line `n` (`options`: the Client's own, e.g. 2.x's versionNegotiation). */
export function newClient(n: LineNumber, info = TEST_CLIENT, options?: object): ClientV1 | ClientV2 {
  return n === 1 ? new ClientV1(info, options) : new ClientV2(info, options as never)
}

/** The fixture server of SDK line `n`, a path under test/fixtures. */
export const fixtureServer = (n: LineNumber): string => `${FIXTURES}/${n === 1 ? 'mcp-server.mjs' : 'mcp-server-v2.mjs'}`

export interface SdkLine {
  line: '1.x' | '2.x'
  /** The line as fixtures take it on their command line. */
  arg: '1' | '2'
  /** The fixture server's file name. */
  server: string
  newClient(): SdkClient
  SdkTransport: typeof StdioClientTransportV2
}

/** Both lines, for describe.each. */
export const SDK_LINES: SdkLine[] = [
  {
    line: '1.x',
    arg: '1',
    server: 'mcp-server.mjs',
    newClient: () => newClient(1) as unknown as SdkClient,
    SdkTransport: StdioClientTransportV1 as unknown as typeof StdioClientTransportV2,
  },
  {
    line: '2.x',
    arg: '2',
    server: 'mcp-server-v2.mjs',
    newClient: () => newClient(2) as unknown as SdkClient,
    SdkTransport: StdioClientTransportV2,
  },
]

/** The server the SDK's StdioClientTransport started: its ChildProcess is private (1.x and 2.x alike); the tests need it. */
export function sdkChild(transport: unknown): ChildProcess | undefined {
  return (transport as { _process?: ChildProcess })._process
}

/**
 * Registers, in `into`, the server the SDK's transport starts, from the moment it is spawned: a
 * plain child of this test process, outside any group the shared cleanup knows (the test file
 * kills it after each test, see killChildren).
 */
export function trackSdkServer<T extends { start(): Promise<void> }>(transport: T, into: Set<ChildProcess>): T {
  const start = transport.start.bind(transport)
  transport.start = () => {
    const started = start()
    const child = sdkChild(transport)
    if (child) into.add(child)
    return started
  }
  return transport
}

/**
 * A Client of `sdk`'s line connected over stdio to its fixture server (this process's environment,
 * REAPKIT_DIST and `env`), the server registered in `servers`; its stderr read as JSON lines.
 */
export async function connectFixture(sdk: SdkLine, servers: Set<ChildProcess>, env: Record<string, string> = {}) {
  const transport = trackSdkServer(
    new sdk.SdkTransport({
      command: process.execPath,
      args: [`${FIXTURES}/${sdk.server}`],
      env: { ...(process.env as Record<string, string>), REAPKIT_DIST: DIST, ...env },
      stderr: 'pipe',
    }),
    servers,
  )
  const err = jsonLines(transport.stderr as Readable)
  const client = sdk.newClient()
  await client.connect(transport)
  return { client, child: sdkChild(transport)!, err }
}

/**
 * A 1.x Client connected over stdio to the server `params` starts (the SDK's own transport), its
 * stderr collected; `setup` runs on the Client before it connects (its notification handlers). A
 * connect that fails says what the server wrote.
 */
export async function connectStdioV1(params: Omit<StdioServerParameters, 'stderr'>, setup?: (client: ClientV1) => void) {
  const transport = new StdioClientTransportV1({ ...params, stderr: 'pipe' })
  let stderr = ''
  transport.stderr!.on('data', (d) => (stderr += d))
  const client = new ClientV1(TEST_CLIENT)
  setup?.(client)
  try {
    await client.connect(transport)
  } catch (err) {
    throw new Error(`the server did not start: ${stderr || String(err)}`)
  }
  return { client, transport, server: sdkChild(transport)!, stderr: () => stderr }
}

/**
 * A transport of SDK line `n` over a child's own pipes: the SDK's StdioServerTransport is
 * newline-delimited JSON-RPC over any two streams, here the child's stdout (read) and stdin
 * (written). A write to the gone child (EPIPE) is not an uncaught error.
 */
export function pipeTransport(n: LineNumber, child: ChildProcess): never {
  child.stdin!.on('error', () => {})
  return (n === 1 ? new StdioServerTransportV1(child.stdout!, child.stdin!) : new StdioServerTransportV2(child.stdout!, child.stdin!)) as never
}
