// The example server, end to end: the real MCP SDK client over stdio, its three tools, cancellation.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { groupMembers } from '../lib/index'
import { exitOf, isGone, ROOT, trackGroup, waitFor } from './helpers'
import { type ClientV1 as Client, connectStdioV1 } from './mcp-sdk'

type Rec = { pid: number; requestId: string | number; status: string; exitCode: number | null; signal: string | null }
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

/** The example server with these flags (and environment), and an SDK client connected to it. */
function connect(flags: string[], env: Record<string, string> = {}) {
  return connectStdioV1({
    command: process.execPath,
    args: [join(ROOT, 'examples', 'process-server', 'server.mjs'), ...flags],
    env: { ...(process.env as Record<string, string>), ...env },
  })
}

describe('examples/process-server', () => {
  it('runs, lists and terminates processes; cancellation stops a run; nothing is left behind', async () => {
    const { client, server } = await connect(['--allow-any'])
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
      expect(parse(await long)).toMatchObject({ exitCode: 128 + 15 }) // SIGTERM, as the supervisor in front of it reports it

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
      // The group is empty in /proc a moment before the server's libuv reports the exit (on a busy
      // machine, a loop turn or more): ask until the record has left 'running', bounded.
      let after: Rec[] = []
      for (const end = Date.now() + 10_000; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
        after = parse(await client.callTool({ name: 'list_processes', arguments: {} })) as Rec[]
        if (after.find((p) => p.pid === victim!.pid)?.status !== 'running') break
      }
      expect(after.find((p) => p.pid === victim!.pid)).toMatchObject({ status: 'terminated', exitCode: 128 + 15 })

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

  it('a run that daemonizes a helper (setsid) in flight at SIGTERM: the drain stops the helper too, nothing outlives the server', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'reapkit-example-'))
    const pidFile = join(dir, 'escapee')
    const { client, server, stderr } = await connect(['--allow', 'sh'])
    let escapee = 0
    try {
      const run = client
        .callTool({ name: 'run_command', arguments: { command: 'sh', args: ['-c', `setsid -f sh -c 'echo $$ > ${pidFile}; exec sleep 1000'; exec sleep 1000`] } })
        .catch(() => {})
      await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n'), 10_000, 'the escapee to start')
      escapee = Number(readFileSync(pidFile, 'utf8'))
      expect(escapee).toBeGreaterThan(1)
      server.kill('SIGTERM')
      expect(await exitOf(server, 20_000)).toEqual({ code: 0, signal: null })
      await run
      await waitFor(() => isGone(escapee), 5000, `the setsid escapee ${escapee} to be gone after the drain`)
      expect(stderr()).toMatch(/"abandoned":0/)
    } finally {
      server.kill('SIGKILL')
      await client.close().catch(() => {})
      // Ours: the pid it wrote itself, still running the sleep it exec'ed.
      if (escapee > 1 && !isGone(escapee) && readFileSync(`/proc/${escapee}/cmdline`, 'utf8').startsWith('sleep')) process.kill(escapee, 'SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('runs only what --allow names; commands get a minimal environment, never the server\'s secrets', async () => {
    const secrets = { REAPKIT_TEST_SECRET: 'hunter2', REAPKIT_TEST_PASSED: 'named' }
    const { client, server } = await connect(['--allow', 'env,true', '--pass-env', 'REAPKIT_TEST_PASSED'], secrets)
    try {
      const env = parse(await client.callTool({ name: 'run_command', arguments: { command: 'env', args: [] } }))
      expect(env.exitCode).toBe(0)
      const vars = Object.fromEntries((env.stdout as string).trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]))
      expect(vars.REAPKIT_TEST_SECRET).toBeUndefined()
      expect(vars.REAPKIT_TEST_PASSED).toBe('named')
      expect(vars.PATH).toBe(process.env.PATH)
      expect(Object.keys(vars).every((k) => ['PATH', 'HOME', 'LANG', 'REAPKIT_TEST_PASSED'].includes(k))).toBe(true)
      for (const [command, args] of [['kill', ['-TERM', String(process.pid)]], ['sh', ['-c', 'true']], ['/usr/bin/env', []]] as const) {
        const refused = (await client.callTool({ name: 'run_command', arguments: { command, args } })) as { isError?: boolean; content: Array<{ text: string }> }
        expect(refused.isError, command).toBe(true)
        expect(refused.content[0]!.text).toMatch(/not allowed.*--allow/)
      }
      const list = parse(await client.callTool({ name: 'list_processes', arguments: {} })) as Array<{ command: string }>
      expect(list.map((p) => p.command)).toEqual(['env']) // nothing refused was started
    } finally {
      server.kill('SIGKILL')
      await client.close().catch(() => {})
    }
    // Without --allow, nothing runs.
    const bare = await connect([])
    try {
      const refused = (await bare.client.callTool({ name: 'run_command', arguments: { command: 'true', args: [] } })) as { isError?: boolean }
      expect(refused.isError).toBe(true)
    } finally {
      bare.server.kill('SIGKILL')
      await bare.client.close().catch(() => {})
    }
  })
})
