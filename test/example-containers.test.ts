// Issue 18 item 5: the example server's container mode (--container IMAGE), end to end on every
// engine that runs here: the real SDK client over stdio, real containers, the engine asked directly
// (`ps -a --filter label=...`) whether each one is gone. Every container carries this test's own
// label (--container-label), and the cleanup removes by that label only.
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { containersWith, describeWithEngines, enginesSkipReason, removeLabelledAndWait, type TestEngine, testEngines, testLabel, waitForEngine } from './containers'
import { childrenOf, exitOf, ROOT } from './helpers'
import { connectStdioV1 } from './mcp-sdk'

const SERVER = join(ROOT, 'examples', 'process-server', 'server.mjs')
const skip = enginesSkipReason()
/** PID 1 prints, then sleeps ignoring SIGTERM (no handler in PID 1): only the engine's kill ends it. */
const READY_THEN_SLEEP = ['-c', 'echo pid $$; ls /sys/class/net; echo ready; exec sleep 1000']

type Result = { content: Array<{ text: string }>; isError?: boolean }
type Container = { engine: string; image: string; runId: string; id: string | null }
type Row = { pid: number; requestId: string | number; command: string; args: string[]; status: string; container?: Container }
const parse = (r: unknown) => JSON.parse((r as Result).content[0]!.text)

interface Running {
  client: Client
  server: ChildProcess
  notes: string[]
  stderr: () => string
}

describeWithEngines('example server --container', skip, () => {
  let label = ''
  let dir = ''
  const started: Running[] = []
  beforeEach(() => {
    label = testLabel()
    dir = mkdtempSync(join(tmpdir(), 'reapkit-example-ctr-'))
  })
  afterEach(async () => {
    for (const s of started) {
      s.server.kill('SIGKILL')
      await s.client.close().catch(() => {})
    }
    started.length = 0
    for (const engine of testEngines()) await removeLabelledAndWait(engine, label)
    rmSync(dir, { recursive: true, force: true })
  })

  /** The example server in container mode on `engine` (this test's label on every container), and a client. */
  async function connect(engine: TestEngine, extra: string[] = []): Promise<Running> {
    const flags = ['--allow', 'sh,sleep', '--container', engine.image, '--engine', engine.bin, '--container-label', label, ...extra]
    const notes: string[] = []
    const { client, server, stderr } = await connectStdioV1({ command: process.execPath, args: [SERVER, ...flags], env: engine.env as Record<string, string> }, (c) =>
      c.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void notes.push(String(n.params.data))),
    )
    const running = { client, server, notes, stderr }
    started.push(running)
    return running
  }

  const call = (s: Running, name: string, args: Record<string, unknown>, options?: { signal?: AbortSignal }) =>
    s.client.callTool({ name, arguments: args }, undefined, options) as Promise<Result>

  /** list_processes until the run tagged `tag` runs and its container id is known (bounded). */
  async function runningRow(s: Running, tag: string): Promise<Row & { container: Container & { id: string } }> {
    let row: Row | undefined
    for (const end = Date.now() + 60_000; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
      row = (parse(await call(s, 'list_processes', { tag })) as Row[]).find((r) => r.status === 'running')
      if (row?.container?.id) return row as Row & { container: Container & { id: string } }
    }
    throw new Error(`no running process tagged ${tag} with a container id: ${JSON.stringify(row)}`)
  }

  const running = (engine: TestEngine) => containersWith(engine, label, false)

  for (const engine of testEngines()) {
    describe(engine.name, () => {
      it("run_command streams a container's output while it runs; list_processes shows its container; terminate_process stops it through the engine", async () => {
        const s = await connect(engine)
        const call1 = call(s, 'run_command', { command: 'sh', args: READY_THEN_SLEEP, tags: ['t'] })
        await waitForEngine(() => s.notes.includes('ready'), 60_000, 'the "ready" line, streamed before the call ends')
        expect(s.notes).toContain('pid 1') // it runs as PID 1 of its own container...
        expect(s.notes).toContain('lo') // ...with no network but loopback (--network none)
        expect(s.notes.some((n) => /^eth/.test(n))).toBe(false)
        const row = await runningRow(s, 't')
        await waitForEngine(() => running(engine).length === 1, 60_000, 'the container to run')
        expect(row).toMatchObject({ command: 'sh', args: READY_THEN_SLEEP, container: { engine: engine.name, image: engine.image } })
        expect(running(engine)).toEqual([row.container.id])
        const stopped = parse(await call(s, 'terminate_process', { pid: row.pid }))
        expect(stopped.containers).toEqual([expect.objectContaining({ ids: [row.container.id], state: 'gone', stopped: true })])
        expect(stopped.containerSurvivors).toEqual([])
        expect(containersWith(engine, label)).toEqual([]) // gone from the engine, not merely stopped (--rm)
        const result = parse(await call1)
        expect(result.stdout).toContain('ready\n')
        expect(result.container).toMatchObject({ id: row.container.id })
      })

      it('the per-call timeout and a cancelled call stop their containers', async () => {
        const s = await connect(engine)
        const timed = call(s, 'run_command', { command: 'sleep', args: ['1000'], timeoutMs: 3000, tags: ['timed'] })
        const row = await runningRow(s, 'timed')
        const result = parse(await timed)
        expect(result.container.id).toBe(row.container.id)
        expect(containersWith(engine, label)).toEqual([])

        const ac = new AbortController()
        const cancelled = call(s, 'run_command', { command: 'sleep', args: ['1000'], tags: ['cancelled'] }, { signal: ac.signal })
        const victim = await runningRow(s, 'cancelled')
        await waitForEngine(() => running(engine).length === 1, 60_000, 'the container to run')
        expect(running(engine)).toEqual([victim.container.id])
        ac.abort()
        await expect(cancelled).rejects.toBeDefined()
        await waitForEngine(() => containersWith(engine, label).length === 0, 30_000, 'the cancelled call\'s container to be gone')
      })

      it('session end (the client closes): the server stops its running containers before it exits', async () => {
        const s = await connect(engine)
        void call(s, 'run_command', { command: 'sleep', args: ['1000'], tags: ['a'] }).catch(() => {})
        void call(s, 'run_command', { command: 'sleep', args: ['1000'], tags: ['b'] }).catch(() => {})
        const ids = [(await runningRow(s, 'a')).container.id, (await runningRow(s, 'b')).container.id]
        await waitForEngine(() => running(engine).length === 2, 60_000, 'both containers to run')
        expect(running(engine).sort()).toEqual(ids.sort())
        // What a host does first when it closes (the SDK's close() then gives 2 s more before its
        // SIGTERM, and 2 s before SIGKILL): its end of the pipe closes. The server drains on it.
        s.server.stdin!.end()
        expect(await exitOf(s.server, 30_000)).toEqual({ code: 0, signal: null })
        expect(containersWith(engine, label)).toEqual([])
      })

      it('SIGTERM drains: the call in flight is answered, its container stopped and confirmed gone before the server exits', async () => {
        const s = await connect(engine)
        const inFlight = call(s, 'run_command', { command: 'sleep', args: ['1000'], tags: ['d'] })
        await runningRow(s, 'd')
        s.server.kill('SIGTERM')
        expect(await exitOf(s.server, 30_000)).toEqual({ code: 0, signal: null })
        expect(containersWith(engine, label)).toEqual([])
        expect(parse(await inFlight).container).toMatchObject({ id: expect.stringMatching(/^[0-9a-f]{12,}$/), state: 'gone' })
        expect(s.stderr()).toMatch(/"abandoned":0/)
      })

      it('HTTP: a session that ends (DELETE) stops its running container; the server keeps serving', async () => {
        const token = randomBytes(24).toString('base64url')
        const flags = ['--http', '0', '--token', token, '--allow', 'sleep', '--container', engine.image, '--engine', engine.bin, '--container-label', label]
        const server = spawn(process.execPath, [SERVER, ...flags], { env: engine.env, stdio: ['ignore', 'ignore', 'pipe'] })
        let stderr = ''
        server.stderr!.on('data', (d) => (stderr += d))
        const client = new Client({ name: 'reapkit-test', version: '1.0.0' })
        started.push({ client, server, notes: [], stderr: () => stderr })
        const listening = /listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/
        await waitForEngine(() => listening.test(stderr) || server.exitCode !== null, 20_000, 'the server to listen')
        const transport = new StreamableHTTPClientTransport(new URL(listening.exec(stderr)![1]!), { requestInit: { headers: { Authorization: `Bearer ${token}` } } })
        await client.connect(transport)
        const s = { client, server, notes: [], stderr: () => stderr }
        void call(s, 'run_command', { command: 'sleep', args: ['1000'], tags: ['h'] }).catch(() => {})
        const { container } = await runningRow(s, 'h')
        await waitForEngine(() => running(engine).length === 1, 60_000, 'the container to run')
        expect(running(engine)).toEqual([container.id])
        await transport.terminateSession()
        await waitForEngine(() => containersWith(engine, label).length === 0, 30_000, 'the session\'s container to be gone')
        // The engine lists it gone before its `stop` client has finished (podman's cleanup runs on):
        // the stop is over when the server has no child left, not before (the leak guard would see it).
        await waitForEngine(() => childrenOf(server.pid!).length === 0, 30_000, 'the server\'s engine calls to end')
        expect(server.exitCode).toBe(null)
      })

      it("a server SIGKILLed and started again on the same --state-file stops its predecessor's container", async () => {
        const state = ['--state-file', join(dir, 'state.json')]
        const first = await connect(engine, state)
        void call(first, 'run_command', { command: 'sleep', args: ['1000'], tags: ['k'] }).catch(() => {})
        const { container } = await runningRow(first, 'k')
        await waitForEngine(() => running(engine).length === 1, 60_000, 'the container to run')
        first.server.kill('SIGKILL')
        await exitOf(first.server, 10_000)
        // Its client died with it (the kernel's death signal); the container did not.
        await new Promise((r) => setTimeout(r, 1000))
        expect(containersWith(engine, label)).toEqual([container.id])
        const second = await connect(engine, state) // connected: the leftovers were dealt with first
        expect(second.stderr()).toMatch(/1 container\(s\)/)
        expect(containersWith(engine, label)).toEqual([])
        expect(parse(await call(second, 'list_processes', {}))).toEqual([])
      })
    })
  }
})
