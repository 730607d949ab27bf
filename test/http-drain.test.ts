// withHttpKeepalive: the drain of MCP servers on Streamable HTTP, both SDK lines (1.x with sessions
// behind Express, 2.x stateless createMcpHandler on node:http), with the real SDK clients of both
// lines over real HTTP on 127.0.0.1, and raw sockets where a client library would hide the wire.
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as Transport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from '@modelcontextprotocol/client'
import type { ChildProcess } from 'node:child_process'
import { IncomingMessage, request as httpRequest, type RequestListener, type Server, type ServerResponse } from 'node:http'
import { createRequire } from 'node:module'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import net from 'node:net'
import { createServer } from 'node:http'
import { describe, expect, it } from 'vitest'
import { createKeepalive } from '../lib/index'
import { withHttpKeepalive } from '../lib/mcp'
import { exitOf, isGone, spawnFixture, waitFor } from './helpers'

type Line = '1' | '2'
type CallOptions = { onprogress?: (p: { message?: string }) => void; timeout?: number; signal?: AbortSignal }

interface Fixture {
  child: ChildProcess
  port: number
  probePort: number | null
  stderr: () => string
  stdout: () => string
}

/** The fixture server of one SDK line, listening (its port read from its first stdout line). */
async function startServer(line: Line, args: string[] = []): Promise<Fixture> {
  const child = spawnFixture('http-drain-server.mjs', ['--line', line, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  const ready = new Promise<[number, number | null]>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      stdout += d
      const m = /listening (\d+)(?: probe (\d+))?/.exec(stdout)
      if (m) resolve([Number(m[1]), m[2] ? Number(m[2]) : null])
    })
    child.once('exit', (code) => reject(new Error(`the fixture exited (${code}) before listening: ${stderr}`)))
  })
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`the fixture did not listen in 20 s: ${stderr}`)), 20_000).unref())
  const [port, probePort] = await Promise.race([ready, timeout])
  return { child, port, probePort, stderr: () => stderr, stdout: () => stdout }
}

const reportLines = (stderr: string) => stderr.split('\n').filter((l) => l.includes('"event":"shutdown"'))

/** An SDK client of line `client` connected to the fixture; it collects the logging notifications it gets. */
async function connect(client: Line, port: number) {
  const url = new URL(`http://127.0.0.1:${port}/mcp`)
  const notes: string[] = []
  if (client === '1') {
    const c = new Client1({ name: 'drain-test-1', version: '1.0.0' })
    c.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void notes.push(String(n.params.data)))
    await c.connect(new Transport1(url))
    const call = (params: { name: string; arguments: Record<string, unknown> }, options: CallOptions = {}) => c.callTool(params, undefined, options)
    return { client: c as unknown as Client1, notes, call }
  }
  const c = new Client2({ name: 'drain-test-2', version: '1.0.0' })
  c.setNotificationHandler('notifications/message', (n) => void notes.push(String(n.params.data)))
  await c.connect(new Transport2(url))
  // 2.x: callTool(params, options); 1.x: callTool(params, resultSchema, options).
  const call = (params: { name: string; arguments: Record<string, unknown> }, options: CallOptions = {}) =>
    (c.callTool as (p: unknown, o: unknown) => ReturnType<Client1['callTool']>)(params, options)
  return { client: c as unknown as Client1, notes, call }
}

/** GET `path` on `port`, on a connection of its own: the status, or the connection error's code. */
function probe(port: number, path: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, agent: false, timeout: 5000 }, (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
    req.on('timeout', () => req.destroy(new Error('probe timeout')))
    req.end()
  })
}

const textOf = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text

const raw = (port: number, body: unknown, headers: Record<string, string> = {}) => {
  const b = JSON.stringify(body)
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  return (
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
    `Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n${extra}Content-Length: ${Buffer.byteLength(b)}\r\n\r\n${b}`
  )
}

/** A raw connection: what it has received so far, and whether the server ended it. */
async function rawSocket(port: number) {
  const socket = net.connect(port, '127.0.0.1')
  let data = ''
  let ended = false
  socket.on('data', (d) => (data += d))
  socket.on('close', () => (ended = true))
  socket.on('error', () => {})
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  return { socket, received: () => data, ended: () => ended }
}

class OwnRequest extends IncomingMessage {}

type ExpressLike = (() => { use(h: unknown): void; post(path: string, h: RequestListener): void } & RequestListener) & { json(): unknown }

const pairs: Array<[Line, Line]> = [
  ['1', '1'],
  ['1', '2'],
  ['2', '2'],
  ['2', '1'],
]

describe('withHttpKeepalive', () => {
  for (const [line, clientLine] of pairs) {
    it(`SDK ${line}.x server, ${clientLine}.x clients: SIGTERM with two calls in flight; both complete with every event; nothing new is taken; exit 0, one report line`, async () => {
      const server = await startServer(line, ['--grace-ms', '15000', '--probe-port', '0'])
      const a = await connect(clientLine, server.port)
      const b = await connect(clientLine, server.port)
      try {
        const progress: string[] = []
        const streaming = a.call({ name: 'count', arguments: { n: 10, everyMs: 100 } }, {
          onprogress: (p) => void progress.push(String(p.message)),
          timeout: 30_000,
        })
        const quiet = b.call({ name: 'count', arguments: { n: 2, everyMs: 400 } }, { timeout: 30_000 })
        await waitFor(() => a.notes.length >= 2, 10_000, 'the streaming call to be under way')
        expect(await probe(server.probePort!, '/readyz')).toBe(200)
        server.child.kill('SIGTERM')
        // Readiness fails from the drain's first moment; liveness holds (on the probe port, which keeps accepting).
        let ready: number | string = 200
        for (const end = Date.now() + 5000; ready === 200 && Date.now() < end; await new Promise((r) => setTimeout(r, 10))) {
          ready = await probe(server.probePort!, '/readyz')
        }
        expect(ready).toBe(503)
        expect(await probe(server.probePort!, '/livez')).toBe(200)
        // The main socket still accepts while calls are in flight: readiness fails there too, liveness holds.
        expect(await probe(server.port, '/readyz')).toBe(503)
        expect(await probe(server.port, '/livez')).toBe(200)
        // A new call is refused: HTTP 503 and -32099.
        await expect(b.call({ name: 'count', arguments: { n: 0, everyMs: 0 } })).rejects.toThrow(/503|-32099|shutting down/i)
        // Both calls in flight complete, with every event, in order.
        expect(textOf(await streaming)).toBe('counted 10')
        expect(textOf(await quiet)).toBe('counted 2')
        expect(a.notes).toEqual(Array.from({ length: 10 }, (_, i) => `line ${i + 1}`))
        expect(progress).toEqual(Array.from({ length: 10 }, (_, i) => `line ${i + 1}`))
        const exit = await exitOf(server.child, 20_000)
        expect(exit).toEqual({ code: 0, signal: null })
        const lines = reportLines(server.stderr())
        expect(lines).toHaveLength(1)
        const report = JSON.parse(lines[0]!)
        expect(report).toMatchObject({ reason: 'SIGTERM', drained: 2, abandoned: 0, refused: 1 })
        expect(await probe(server.port, '/livez')).toBe('ECONNREFUSED') // gone
        if (line === '1') expect(report.sessions).toBe(2)
      } finally {
        await a.client.close().catch(() => {})
        await b.client.close().catch(() => {})
      }
    })
  }

  for (const line of ['1', '2'] as Line[]) {
    it(`SDK ${line}.x: grace exceeded by a call that ignores cancellation: its process is stopped, its stream ends with an error, exit 1, one abandoned`, async () => {
      const server = await startServer(line, ['--grace-ms', '1000'])
      const a = await connect(line, server.port)
      try {
        const call = a.call({ name: 'stubborn', arguments: {} }, { timeout: 30_000 })
        await waitFor(() => /child (\d+)/.test(server.stdout()), 10_000, 'the stubborn call to start its process')
        const pid = Number(/child (\d+)/.exec(server.stdout())![1])
        server.child.kill('SIGTERM')
        const error = await call.then(
          () => null,
          (err: Error & { code?: number }) => err,
        )
        expect(error).not.toBeNull()
        expect(`${error!.message} ${error!.code}`).toMatch(/-32099|503|shutting down/i)
        expect(await exitOf(server.child, 20_000)).toEqual({ code: 1, signal: null })
        const lines = reportLines(server.stderr())
        expect(lines).toHaveLength(1)
        expect(JSON.parse(lines[0]!)).toMatchObject({ reason: 'SIGTERM', abandoned: 1 })
        await waitFor(() => isGone(pid), 10_000, 'the abandoned call\'s process to be gone')
      } finally {
        await a.client.close().catch(() => {})
      }
    })
  }

  it('a request on a connection still open gets 503, Retry-After and -32099 with its id; a notification passes; idle connections close at once, busy ones after their response', async () => {
    const server = await startServer('2', ['--grace-ms', '15000'])
    // Three connections: one idle (it served a call already), one busy with a call, one that pipelines behind a call.
    const idle = await rawSocket(server.port)
    idle.socket.write(raw(server.port, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'count', arguments: { n: 0, everyMs: 0 } } }))
    await waitFor(() => idle.received().includes('counted 0'), 10_000, 'the idle connection\'s first call')
    const busy = await rawSocket(server.port)
    busy.socket.write(raw(server.port, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'count', arguments: { n: 6, everyMs: 100 } } }))
    const notify = await rawSocket(server.port)
    notify.socket.write(raw(server.port, { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'count', arguments: { n: 4, everyMs: 100 } } }))
    await waitFor(() => busy.received().includes('line 1') && notify.received().includes('line 1'), 10_000, 'both calls under way')
    server.child.kill('SIGTERM')
    await waitFor(() => idle.ended(), 5000, 'the idle connection to be closed')
    // Pipelined behind the calls in flight: a new call (refused), and on the other a notification (passes).
    busy.socket.write(raw(server.port, { jsonrpc: '2.0', id: 'late', method: 'tools/call', params: { name: 'count', arguments: { n: 1, everyMs: 0 } } }))
    notify.socket.write(raw(server.port, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99 } }))
    await waitFor(() => busy.ended() && notify.ended(), 15_000, 'both busy connections to end after their responses')
    expect(busy.received()).toContain('counted 6')
    const refused = busy.received().slice(busy.received().indexOf('HTTP/1.1 503'))
    expect(refused).toMatch(/^HTTP\/1\.1 503/)
    expect(refused).toMatch(/retry-after: 5\r\n/i)
    expect(refused).toMatch(/connection: close\r\n/i)
    const body = JSON.parse(refused.slice(refused.indexOf('\r\n\r\n') + 4))
    expect(body).toMatchObject({ jsonrpc: '2.0', id: 'late', error: { code: -32099, data: { reason: 'SIGTERM' } } })
    expect(notify.received()).toContain('counted 4')
    expect(notify.received()).toMatch(/HTTP\/1\.1 202/)
    expect(notify.received()).not.toMatch(/HTTP\/1\.1 503/)
    expect(await exitOf(server.child, 20_000)).toEqual({ code: 0, signal: null })
    expect(JSON.parse(reportLines(server.stderr())[0]!)).toMatchObject({ drained: 2, abandoned: 0, refused: 1 })
  })

  it('while calls are in flight, a new connection still gets in: a cancel passes (202), a new call gets 503; with stopAccepting at-drain it is refused', async () => {
    for (const mode of ['after-calls', 'at-drain']) {
      const server = await startServer('2', ['--grace-ms', '15000', '--stop-accepting', mode])
      const busy = await rawSocket(server.port)
      // The call in flight ends when this test says (hold): it must outlast the readiness probes and
      // both late requests, or the drain ends and the listener closes before they are made (a loaded
      // machine did that to 100 ms lines, then to 8 lines 500 ms apart: ECONNREFUSED).
      const release = join(mkdtempSync(join(tmpdir(), 'reapkit-hold-')), 'release')
      busy.socket.write(raw(server.port, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'hold', arguments: { path: release } } }))
      await waitFor(() => busy.received().includes('line 1'), 10_000, 'the call to be under way')
      server.child.kill('SIGTERM')
      // Readiness flips at the drain's first moment: once it has, the drain has begun.
      let connected: Awaited<ReturnType<typeof rawSocket>> | string = ''
      for (const end = Date.now() + 5000; Date.now() < end; await new Promise((r) => setTimeout(r, 20))) {
        const status = await probe(server.port, '/readyz')
        // at-drain: a probe may get its 503 in the moment between the drain's start and the listener's
        // close (then a connect is refused: a full run caught that); the refusal is what is awaited.
        if (status === 503 && mode === 'after-calls') {
          connected = await rawSocket(server.port)
          break
        }
        if (status === 'ECONNREFUSED') {
          connected = status
          break
        }
      }
      if (mode === 'at-drain') {
        expect(connected).toBe('ECONNREFUSED')
      } else {
        const cancel = connected as Awaited<ReturnType<typeof rawSocket>>
        cancel.socket.write(raw(server.port, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99 } }))
        const late = await rawSocket(server.port)
        late.socket.write(raw(server.port, { jsonrpc: '2.0', id: 'new', method: 'tools/call', params: { name: 'count', arguments: { n: 1, everyMs: 0 } } }))
        await waitFor(() => cancel.ended() && late.ended(), 10_000, 'both answers')
        expect(cancel.received()).toMatch(/^HTTP\/1\.1 202/)
        expect(late.received()).toMatch(/^HTTP\/1\.1 503/)
        expect(late.received()).toContain('"id":"new"')
      }
      writeFileSync(release, '')
      await waitFor(() => busy.ended(), 15_000, 'the call in flight to end')
      expect(busy.received()).toContain('released')
      rmSync(dirname(release), { recursive: true, force: true })
      expect(await exitOf(server.child, 20_000)).toEqual({ code: 0, signal: null })
    }
  })

  it('SDK 2.x: a subscriptions/listen stream does not hold the drain, and ends with its graceful empty result', async () => {
    const server = await startServer('2', ['--grace-ms', '15000'])
    const listen = await rawSocket(server.port)
    const started = Date.now()
    listen.socket.write(
      raw(
        server.port,
        {
          jsonrpc: '2.0',
          id: 'sub-1',
          method: 'subscriptions/listen',
          params: {
            notifications: { toolsListChanged: true },
            _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} },
          },
        },
        { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'subscriptions/listen' },
      ).replace('MCP-Protocol-Version: 2025-11-25\r\n', ''),
    )
    await waitFor(() => listen.received().includes('acknowledged') || listen.received().includes('"error"'), 10_000, 'the listen stream to open')
    expect(listen.received()).toContain('notifications/subscriptions/acknowledged')
    server.child.kill('SIGTERM')
    expect(await exitOf(server.child, 20_000)).toEqual({ code: 0, signal: null })
    expect(Date.now() - started).toBeLessThan(12_000) // not the 15 s grace
    await waitFor(() => listen.ended(), 5000, 'the listen stream to end')
    // Its last event: the JSON-RPC result of the listen request (the spec's graceful close).
    const events = listen.received().split('data: ').slice(1).map((e) => JSON.parse(e.slice(0, e.indexOf('\n'))))
    expect(events.at(-1)).toMatchObject({ jsonrpc: '2.0', id: 'sub-1', result: {} })
    expect(JSON.parse(reportLines(server.stderr())[0]!)).toMatchObject({ abandoned: 0, streams: 1, streamsEnded: 0 })
  })

  it('while draining, a request whose client leaves mid-body is let go (refused, not held); the next gets its 503 with its id', async () => {
    const server = await startServer('2', ['--grace-ms', '15000'])
    const busy = await rawSocket(server.port)
    busy.socket.write(raw(server.port, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'count', arguments: { n: 8, everyMs: 150 } } }))
    await waitFor(() => busy.received().includes('line 1'), 10_000, 'the call to be under way')
    server.child.kill('SIGTERM')
    await new Promise((r) => setTimeout(r, 200))
    // Headers and a tenth of the body it announces, then gone: what it carried can never be known.
    const half = await rawSocket(server.port)
    const full = raw(server.port, { jsonrpc: '2.0', id: 'half', method: 'tools/call', params: { name: 'count', arguments: { n: 1, everyMs: 0 } } })
    half.socket.write(full.slice(0, full.indexOf('\r\n\r\n') + 4 + 10))
    await new Promise((r) => setTimeout(r, 200))
    half.socket.destroy()
    const late = await rawSocket(server.port)
    late.socket.write(raw(server.port, { jsonrpc: '2.0', id: 'late', method: 'tools/call', params: { name: 'count', arguments: { n: 1, everyMs: 0 } } }))
    await waitFor(() => late.ended(), 10_000, 'the late request to be answered and its connection closed')
    const body = JSON.parse(late.received().slice(late.received().indexOf('\r\n\r\n') + 4))
    expect(body).toMatchObject({ id: 'late', error: { code: -32099 } })
    await waitFor(() => busy.ended(), 15_000, 'the call in flight to finish')
    expect(busy.received()).toContain('counted 8')
    expect(await exitOf(server.child, 20_000)).toEqual({ code: 0, signal: null })
    // The one that left counts as refused, seen to go (with no listener for its end it would be neither).
    expect(JSON.parse(reportLines(server.stderr())[0]!)).toMatchObject({ drained: 1, abandoned: 0, refused: 2 })
  })

  // The body tee takes each chunk through the request's class where node:http builds requests from
  // a class the server names (no push() of its own per request), and follows a request whose
  // prototype its handler swapped (Express does, before the body arrives). In each case the
  // abandoned call's last event must carry its id, which only the tee can know.
  const servers: Record<string, (handler: RequestListener) => Server> = {
    'node:http': (handler) => createServer(handler),
    'a server with its own IncomingMessage class': (handler) => createServer({ IncomingMessage: OwnRequest }, handler),
    Express: (handler) => createServer(expressApp(handler)),
    // Its prototype swapped after the handler returned (the tee cannot see it happen), its body in a
    // later packet than its headers: the chunks would go to Readable's push(), past the class's.
    'Express behind an await, the body in two packets': (handler) => {
      const app = expressApp(handler)
      return createServer((req, res) => void new Promise((resolve) => setTimeout(resolve, 50)).then(() => app(req, res)))
    },
  }
  function expressApp(handler: RequestListener): RequestListener {
    const express = createRequire(__filename)('express') as ExpressLike
    const app = express()
    app.use(express.json())
    app.post('/mcp', handler)
    return app
  }
  for (const [name, make] of Object.entries(servers)) {
    it(`${name}: an abandoned call's last event carries its id; the request keeps its class (and, but for Express, gets no push() of its own)`, async () => {
      const seen: Array<{ ownPush: boolean; ownClass: boolean; name: string }> = []
      const server = make((req, res) => {
        seen.push({ ownPush: Object.hasOwn(req, 'push'), ownClass: req instanceof OwnRequest, name: req.constructor.name })
        const stream = (): void => void (res as ServerResponse).writeHead(200, { 'content-type': 'text/event-stream' }).write('event: message\ndata: {}\n\n')
        if (req.readableEnded || (req as { body?: unknown }).body !== undefined) stream()
        else req.resume().once('end', stream)
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      const keepalive = createKeepalive({ signals: false, stdin: false, parentDeath: false, exit: false, finalLine: false, graceMs: 300 })
      withHttpKeepalive(server, { keepalive })
      const port = (server.address() as net.AddressInfo).port
      const client = await rawSocket(port)
      try {
        const request = raw(port, { jsonrpc: '2.0', id: 'abandon-me', method: 'tools/call', params: { name: 'count', arguments: {} } })
        const cut = name.includes('two packets') ? request.indexOf('\r\n\r\n') + 4 + 20 : request.length
        client.socket.write(request.slice(0, cut))
        if (cut < request.length) {
          await new Promise((r) => setTimeout(r, 200)) // past the await: the prototype is swapped before the rest comes
          client.socket.write(request.slice(cut))
        }
        await waitFor(() => client.received().includes('data: {}'), 10_000, 'the call\'s stream to start')
        expect(await keepalive.shutdown('test')).toMatchObject({ abandoned: 1 })
        await waitFor(() => client.ended(), 10_000, 'the abandoned stream to end')
        const events = client.received().split('data: ').slice(1).map((e) => JSON.parse(e.slice(0, e.indexOf('\n'))))
        expect(events.at(-1)).toMatchObject({ id: 'abandon-me', error: { code: -32099, data: { abandoned: true } } })
        expect(seen).toHaveLength(1)
        expect(seen[0]!.ownClass).toBe(name.includes('own'))
        if (name.startsWith('Express')) return // its handler sees the body parsed, and the push() the tee put back after it
        expect(seen[0]!.ownPush).toBe(false) // one shape for every request: the class tees
        expect(seen[0]!.name).toBe(name.includes('own') ? 'OwnRequest' : 'IncomingMessage')
      } finally {
        client.socket.destroy()
        server.closeAllConnections()
        server.close()
      }
    })
  }

  it('pipelined calls queued behind a held response end when their client leaves (Node emits no close for them): the drain does not wait for them', async () => {
    const held: ServerResponse[] = []
    const server = createServer((req, res) => void req.resume().once('end', () => (held.length === 0 ? held.push(res) : res.end('{}'))))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const keepalive = createKeepalive({ signals: false, stdin: false, parentDeath: false, exit: false, finalLine: false, graceMs: 30_000 })
    const drain = withHttpKeepalive(server, { keepalive })
    const port = (server.address() as net.AddressInfo).port
    const client = await rawSocket(port)
    try {
      const call = (id: number) => raw(port, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'count', arguments: {} } })
      client.socket.write(call(1) + call(2) + call(3))
      await waitFor(() => drain.stats.calls === 3, 10_000, 'the three calls to be tracked')
      client.socket.destroy()
      await waitFor(() => drain.stats.calls === 0, 10_000, 'the calls of the connection gone to end')
      // Nothing left to wait for: the shutdown ends long before its 30 s grace, none abandoned.
      expect(await keepalive.shutdown('test')).toMatchObject({ abandoned: 0 })
    } finally {
      client.socket.destroy()
      server.closeAllConnections()
      server.close()
    }
  })

  it('a request class whose constructor pushes (before the tee class has set its field) is served', async () => {
    // The tee class's field is set only once the base constructor has returned: a push() from there finds it unset.
    class Eager extends IncomingMessage {
      constructor(socket: net.Socket) {
        super(socket)
        this.push(Buffer.alloc(0))
      }
    }
    const server = createServer({ IncomingMessage: Eager }, (req, res) => void req.resume().once('end', () => res.end('ok')))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const keepalive = createKeepalive({ signals: false, stdin: false, parentDeath: false, exit: false, finalLine: false })
    withHttpKeepalive(server, { keepalive })
    try {
      const status = await new Promise<number | string>((resolve) => {
        const port = (server.address() as net.AddressInfo).port
        const req = httpRequest({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', agent: false, timeout: 5000 }, (res) => {
          res.resume()
          resolve(res.statusCode ?? 0)
        })
        req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
        req.on('timeout', () => req.destroy(new Error('timeout')))
        req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call' }))
      })
      expect(status).toBe(200)
    } finally {
      keepalive.dispose()
      server.closeAllConnections()
      server.close()
    }
  })

  it('rejects bad options before touching the server', async () => {
    const http = createServer()
    expect(() => withHttpKeepalive({} as never)).toThrow(TypeError)
    expect(() => withHttpKeepalive(http, { readinessPath: 'readyz' })).toThrow(/starts with "\/"/)
    expect(() => withHttpKeepalive(http, { retryAfterSeconds: -1 })).toThrow(RangeError)
    expect(() => withHttpKeepalive(http, { probePort: 70000 })).toThrow(RangeError)
    expect(() => withHttpKeepalive(http, { graceMs: -5 })).toThrow(RangeError)
    expect(() => withHttpKeepalive(http, { keepalive: {} as never })).toThrow(/createKeepalive/)
    expect(() => withHttpKeepalive(http, { onShutdown: 'close' as never })).toThrow(TypeError)
    const keepalive = createKeepalive({ signals: false, stdin: false, parentDeath: false, exit: false })
    try {
      expect(() => withHttpKeepalive(http, { keepalive, graceMs: 5 })).toThrow(/createKeepalive/)
    } finally {
      keepalive.dispose()
    }
    expect(http.emit).toBe(createServer().emit) // untouched by every refusal above
  })
})
