// A real MCP SDK client against a real MCP SDK server over stdio, the server drained by reapkit.
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import type { ChildProcess } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { groupMembers, SHUTTING_DOWN_JSONRPC_CODE } from '../lib/index'
import { StdioClientTransport as ReapkitTransport } from '../lib/mcp'
import { DIST, exitOf, FIXTURES } from './helpers'

async function connect(env: NodeJS.ProcessEnv = {}) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [`${FIXTURES}/mcp-server.mjs`],
    env: { ...(process.env as Record<string, string>), REAPKIT_DIST: DIST, ...(env as Record<string, string>) },
    stderr: 'pipe',
  })
  let stderr = ''
  transport.stderr!.on('data', (d) => (stderr += String(d)))
  const client = new Client({ name: 'reapkit-test', version: '1.0.0' })
  await client.connect(transport)
  // The SDK keeps its ChildProcess private; the test needs its exit status and must clean it up.
  const child = (transport as unknown as { _process: ChildProcess })._process
  return { client, transport, child, report: () => JSON.parse(stderr.trim().split('\n').pop()!) }
}

describe('withKeepalive on the MCP SDK 1.x (real client, real server, stdio)', () => {
  it('SIGTERM mid-call: the call completes, a later call gets -32099, exit 0, report drained 1', async () => {
    const { client, child, report } = await connect()
    try {
      const slow = client.callTool({ name: 'slow', arguments: { ms: 600 } })
      await new Promise((r) => setTimeout(r, 200))
      child.kill('SIGTERM')
      await new Promise((r) => setTimeout(r, 50))
      await expect(client.callTool({ name: 'quick', arguments: {} })).rejects.toMatchObject({ code: SHUTTING_DOWN_JSONRPC_CODE })
      expect(await slow).toMatchObject({ content: [{ type: 'text', text: 'slept 600' }] })
      expect(await exitOf(child)).toEqual({ code: 0, signal: null })
      // served: initialize and slow; quick was refused
      expect(report()).toMatchObject({ event: 'shutdown', reason: 'SIGTERM', served: 2, drained: 1, abandoned: 0, refused: 1 })
    } finally {
      child.kill('SIGKILL')
      await client.close().catch(() => {})
    }
  })

  it('the client closes stdin: the server drains and leaves at once (the SDK alone would not notice)', async () => {
    const { client, child, report } = await connect()
    try {
      await client.callTool({ name: 'quick', arguments: {} })
      const t0 = Date.now()
      await client.close() // stdin end; the SDK waits up to 2 s before it would send SIGTERM
      expect(await exitOf(child)).toEqual({ code: 0, signal: null })
      expect(Date.now() - t0).toBeLessThan(1900) // it left on stdin end, before any signal
      expect(report()).toMatchObject({ reason: 'stdin-end', served: 2, abandoned: 0 }) // initialize, quick
    } finally {
      child.kill('SIGKILL')
    }
  })
})

describe('StdioClientTransport from reapkit/mcp (the SDK Client on top, unchanged)', () => {
  it('works as a drop-in, and closes a server behind sh -c that ignores stdin end with no survivors', async () => {
    const transport = new ReapkitTransport(
      {
        command: 'sh',
        args: ['-c', `"${process.execPath}" "${FIXTURES}/mcp-server.mjs"; :`],
        env: { REAPKIT_DIST: DIST, IGNORE_EOF: '1' },
        stderr: 'pipe',
      },
      { closeTimeoutMs: 300, graceMs: 5000 },
    )
    let stderr = ''
    transport.stderr!.on('data', (d: Buffer) => (stderr += String(d)))
    const client = new Client({ name: 'reapkit-test', version: '1.0.0' })
    await client.connect(transport as never)
    const pgid = transport.pid!
    try {
      expect(groupMembers(pgid).length).toBe(2) // sh and the real server, in their own group
      expect(await client.callTool({ name: 'quick', arguments: {} })).toMatchObject({ content: [{ text: 'quick' }] })
      const t0 = Date.now()
      await client.close()
      const elapsed = Date.now() - t0
      expect(groupMembers(pgid)).toEqual([]) // the real server too, not only sh
      expect(elapsed).toBeLessThan(4000) // the SDK's own close takes 4 s here and leaves the server running
      // The group's SIGTERM also kills sh, the server's parent: whichever the server notices first is
      // its reason (an idle server may be gone before its SIGTERM handler runs).
      const report = JSON.parse(stderr.trim().split('\n').pop()!)
      expect(report).toMatchObject({ event: 'shutdown', abandoned: 0 })
      expect(['SIGTERM', 'parent-death']).toContain(report.reason)
    } finally {
      for (const pid of groupMembers(pgid)) process.kill(pid, 'SIGKILL')
    }
  })
})
