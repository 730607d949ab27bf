// The example server, end to end: the real MCP SDK client over stdio, its three tools, cancellation.
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { groupMembers } from '../lib/index'
import { exitOf, ROOT, trackGroup, waitFor } from './helpers'

type Rec = { pid: number; requestId: string | number; status: string; signal: string | null }
const parse = (r: unknown) => JSON.parse((r as { content: Array<{ text: string }> }).content[0]!.text)

/** Asks list_processes (bounded: 100 tries, 20 ms apart) until a running process shows up. */
async function firstRunning(client: Client): Promise<Rec | undefined> {
  for (let i = 0; i < 100; i++) {
    const list = parse(await client.callTool({ name: 'list_processes', arguments: {} })) as Rec[]
    const running = list.find((p) => p.status === 'running')
    if (running) return running
    await new Promise((r) => setTimeout(r, 20))
  }
  return undefined
}

describe('examples/process-server', () => {
  it('runs, lists and terminates processes; cancellation stops a run; nothing is left behind', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(ROOT, 'examples', 'process-server', 'server.mjs')],
      stderr: 'pipe',
    })
    transport.stderr!.on('data', () => {})
    const client = new Client({ name: 'reapkit-test', version: '1.0.0' })
    await client.connect(transport)
    const server = (transport as unknown as { _process: ChildProcess })._process
    const started: number[] = []
    try {
      // run_command: output and status
      const hi = parse(await client.callTool({ name: 'run_command', arguments: { command: 'sh', args: ['-c', 'echo hi; exit 3'] } }))
      expect(hi).toMatchObject({ exitCode: 3, signal: null, stdout: 'hi\n' })

      // a long run, terminated through terminate_process by pid
      const long = client.callTool({ name: 'run_command', arguments: { command: 'sleep', args: ['1000'] } })
      const running = await firstRunning(client)
      expect(running).toBeDefined()
      started.push(running!.pid)
      trackGroup(running!.pid)
      const terminated = parse(await client.callTool({ name: 'terminate_process', arguments: { pid: running!.pid } }))
      expect(terminated).toMatchObject({ escalated: false, survivors: [] })
      expect(parse(await long)).toMatchObject({ signal: 'SIGTERM' })

      // terminate_process refuses what the server did not start
      const refused = (await client.callTool({ name: 'terminate_process', arguments: { pid: process.pid } })) as { isError?: boolean }
      expect(refused.isError).toBe(true)

      // cancellation: the client aborts the call, the server stops that request's process
      const ac = new AbortController()
      const cancelled = client.callTool({ name: 'run_command', arguments: { command: 'sleep', args: ['1000'] } }, undefined, { signal: ac.signal })
      const victim = await firstRunning(client)
      expect(victim).toBeDefined()
      started.push(victim!.pid)
      trackGroup(victim!.pid)
      ac.abort()
      await expect(cancelled).rejects.toBeDefined()
      await waitFor(() => groupMembers(victim!.pid).length === 0, 10_000, 'the cancelled process to stop')
      const after = parse(await client.callTool({ name: 'list_processes', arguments: {} })) as Rec[]
      expect(after.find((p) => p.pid === victim!.pid)).toMatchObject({ status: 'terminated', signal: 'SIGTERM' })

      // shutting down stops everything the server still runs
      void client.callTool({ name: 'run_command', arguments: { command: 'sleep', args: ['1000'] } }).catch(() => {})
      const last = await firstRunning(client)
      started.push(last!.pid)
      trackGroup(last!.pid)
      const t0 = Date.now()
      server.kill('SIGTERM')
      expect(await exitOf(server, 20_000)).toEqual({ code: 0, signal: null }) // drained, nothing abandoned
      expect(Date.now() - t0).toBeLessThan(6000) // its processes were stopped at the start of the drain
      expect(started.every((pid) => groupMembers(pid).length === 0)).toBe(true)
    } finally {
      server.kill('SIGKILL')
      await client.close().catch(() => {})
    }
  })
})
