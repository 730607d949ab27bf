// The example server in HTTP mode (--http), end to end: a real server process, real HTTP on
// 127.0.0.1, the real SDK clients of both lines (1.x Client + StreamableHTTPClientTransport, 2.x
// @modelcontextprotocol/client), and raw fetch or sockets where a client would hide the wire.
import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from '@modelcontextprotocol/client'
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as Transport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { Agent, request as httpRequest } from 'node:http'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { childrenOf, exitOf, groupMembers, isGone, ROOT, spawnGroup, trackGroup, waitFor } from './helpers'
import { scrape as parseScrape } from './prometheus'

const SERVER = join(ROOT, 'examples', 'process-server', 'server.mjs')
const TOKEN = `a-${randomBytes(24).toString('base64url')}`
const TOKEN_B = `b-${randomBytes(24).toString('base64url')}`
const STREAM = ['-c', 'for i in 1 2 3 4 5 6 7; do echo line $i; sleep 0.1; done']
const SEVEN = [1, 2, 3, 4, 5, 6, 7].map((i) => `line ${i}`)
const linux = process.platform === 'linux'

type Rec = { pid: number; requestId: string | number; command: string; args: string[]; status: string; exitCode: number | null; tags: string[] }
type Result = { content: Array<{ text: string }>; isError?: boolean }
const parse = (r: unknown) => JSON.parse((r as Result).content[0]!.text)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Server {
  child: ChildProcess
  port: number
  url: URL
  stderr: () => string
}

/** The example server in HTTP mode (port 0, tokens TOKEN and TOKEN_B), listening. */
async function startServer(args: string[] = [], env: Record<string, string> = {}): Promise<Server> {
  const child = spawnGroup(process.execPath, [SERVER, '--http', '0', '--allow-any', '--token', TOKEN, '--token', TOKEN_B, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env,
  })
  let stderr = ''
  child.stderr!.setEncoding('utf8')
  child.stderr!.on('data', (d) => (stderr += d))
  const listening = /process-server: listening on http:\/\/127\.0\.0\.1:(\d+)\/mcp\n/
  await waitFor(() => listening.test(stderr) || child.exitCode !== null, 20_000, 'the server to listen')
  const m = listening.exec(stderr)
  if (!m) throw new Error(`the server did not start: ${stderr}`)
  const port = Number(m[1])
  return { child, port, url: new URL(`http://127.0.0.1:${port}/mcp`), stderr: () => stderr }
}

const reportLines = (stderr: string) => stderr.split('\n').filter((l) => l.includes('"event":"shutdown"'))

type Line = '1' | '2'
interface Conn {
  line: Line
  notes: string[]
  /** When each note arrived (Date.now()). */
  noteTimes: number[]
  sessionId: () => string
  call: (name: string, args: Record<string, unknown>, options?: { onprogress?: (p: { progress: number; message?: string }) => void }) => Promise<Result>
  terminateSession: () => Promise<void>
  close: () => Promise<void>
}

/** A client of SDK line `line` with `token`; it collects the logging notifications' data. */
async function connect(line: Line, server: Server, token = TOKEN, fetchImpl?: typeof fetch): Promise<Conn> {
  const requestInit = { headers: { Authorization: `Bearer ${token}` } }
  const notes: string[] = []
  const noteTimes: number[] = []
  const note = (data: unknown) => {
    notes.push(String(data))
    noteTimes.push(Date.now())
  }
  if (line === '1') {
    const client = new Client1({ name: 'example-http-1', version: '1.0.0' })
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => note(n.params.data))
    const transport = new Transport1(server.url, { requestInit, ...(fetchImpl ? { fetch: fetchImpl } : {}) })
    await client.connect(transport)
    return {
      line,
      notes,
      noteTimes,
      sessionId: () => transport.sessionId!,
      call: (name, args, options) => client.callTool({ name, arguments: args }, undefined, options) as Promise<Result>,
      terminateSession: () => transport.terminateSession(),
      close: () => client.close(),
    }
  }
  const client = new Client2({ name: 'example-http-2', version: '1.0.0' })
  client.setNotificationHandler('notifications/message', (n) => note(n.params.data))
  const transport = new Transport2(server.url, { requestInit })
  await client.connect(transport)
  return {
    line,
    notes,
    noteTimes,
    sessionId: () => transport.sessionId!,
    call: (name, args, options) => client.callTool({ name, arguments: args }, options) as unknown as Promise<Result>,
    terminateSession: () => transport.terminateSession(),
    close: () => client.close(),
  }
}

/** Asks list_processes (bounded) until a running process with `tag` shows up; tracks its group for the cleanup. */
async function running(conn: Conn, tag: string): Promise<Rec> {
  for (let i = 0; i < 250; i++) {
    const found = (parse(await conn.call('list_processes', { tag })) as Rec[]).find((p) => p.status === 'running')
    if (found) {
      trackGroup(found.pid)
      for (const kid of childrenOf(found.pid)) trackGroup(kid) // the command under the native supervisor leads a group too
      return found
    }
    await sleep(20)
  }
  throw new Error(`no running process tagged ${tag}`)
}

/** POST a JSON-RPC body to /mcp with fetch: status, headers and body text. */
async function post(server: Server, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  return { status: res.status, headers: res.headers, text: await res.text() }
}

const auth = (token: string, sessionId?: string): Record<string, string> => ({
  authorization: `Bearer ${token}`,
  ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
})
const runCall = (id: string | number, command: string, args: string[], tags: string[] = []) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'run_command', arguments: { command, args, tags } },
})

/** A raw HTTP/1.1 connection to the server: what it received so far, and a write. */
async function rawSocket(port: number) {
  const socket = net.connect(port, '127.0.0.1')
  await once(socket, 'connect')
  let data = ''
  socket.setEncoding('utf8')
  socket.on('data', (d) => (data += d))
  socket.on('error', () => {})
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  return { socket, data: () => data, closed }
}
const rawPost = (port: number, body: unknown, headers: Record<string, string>) => {
  const b = JSON.stringify(body)
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  return (
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
    `${extra}Content-Length: ${Buffer.byteLength(b)}\r\n\r\n${b}`
  )
}

/** GET `path` through `agent`: the status, or the connection error's code. */
function get(port: number, path: string, agent: Agent | false): Promise<number | string> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, agent, timeout: 5000 }, (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.end()
  })
}

/** Awaits `predicate` every 50 ms until true, or throws after `timeoutMs`. */
async function until(predicate: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(50)
  }
}

async function closeAll(conns: Array<Conn | undefined>) {
  await Promise.all(conns.map((c) => c?.close().catch(() => {})))
}

describe.runIf(linux)('examples/process-server --http', () => {
  it('streams run_command output as logging and progress notifications, in order, before the result (both SDK lines)', async () => {
    const server = await startServer()
    const conns: Conn[] = []
    try {
      for (const line of ['1', '2'] as const) {
        const conn = await connect(line, server)
        conns.push(conn)
        const progress: Array<{ progress: number; message?: string }> = []
        const result = await conn.call('run_command', { command: 'sh', args: STREAM }, { onprogress: (p) => void progress.push(p) })
        const resultAt = Date.now()
        const notesBefore = conn.notes.length
        expect(parse(result), `line ${line}`).toMatchObject({ exitCode: 0, stdout: `${SEVEN.join('\n')}\n` })
        expect(notesBefore, `line ${line}: logging notifications before the result`).toBeGreaterThanOrEqual(5)
        expect(conn.notes, `line ${line}`).toEqual(SEVEN)
        expect(progress.map((p) => p.message), `line ${line}`).toEqual(SEVEN)
        expect(progress.map((p) => p.progress), `line ${line}`).toEqual([1, 2, 3, 4, 5, 6, 7])
        // Streamed while it ran, not sent in one batch at the end: the command sleeps 0.6 s at least
        // between its first line and its exit, so the first line came that long before the result.
        expect(resultAt - conn.noteTimes[0]!, `line ${line}`).toBeGreaterThanOrEqual(250)
      }
    } finally {
      await closeAll(conns)
      server.child.kill('SIGKILL')
    }
  })

  it('run_command, list_processes (tag filter) and terminate_process (by pid and by request id) work with both SDK lines', async () => {
    const server = await startServer()
    const conns: Conn[] = []
    try {
      for (const line of ['1', '2'] as const) {
        const conn = await connect(line, server)
        conns.push(conn)
        const hi = parse(await conn.call('run_command', { command: 'sh', args: ['-c', 'echo hi; exit 3'], tags: ['quick'] }))
        expect(hi).toMatchObject({ exitCode: 3, signal: null, stdout: 'hi\n' })

        const first = conn.call('run_command', { command: 'sleep', args: ['1000'], tags: ['long', 'one'] })
        const one = await running(conn, 'one')
        const second = conn.call('run_command', { command: 'sleep', args: ['1000'], tags: ['long', 'two'] })
        const two = await running(conn, 'two')
        expect(one).toMatchObject({ command: 'sleep', args: ['1000'], tags: ['long', 'one'] })

        const long = parse(await conn.call('list_processes', { tag: 'long' })) as Rec[]
        expect(long.map((p) => p.pid).sort()).toEqual([one.pid, two.pid].sort())
        const quick = parse(await conn.call('list_processes', { tag: 'quick' })) as Rec[]
        expect(quick).toEqual([expect.objectContaining({ pid: hi.pid, status: 'exited', exitCode: 3, tags: ['quick'], requestId: hi.requestId })])
        expect(parse(await conn.call('list_processes', { tag: 'none' }))).toEqual([])
        expect((parse(await conn.call('list_processes', {})) as Rec[]).length).toBe(3)

        // By pid, and by the request id the client knows (its own, as list_processes shows it).
        expect(parse(await conn.call('terminate_process', { pid: one.pid }))).toMatchObject({ escalated: false, survivors: [] })
        expect(parse(await first)).toMatchObject({ exitCode: 128 + 15 })
        expect(typeof two.requestId).toBe('number')
        expect(parse(await conn.call('terminate_process', { requestId: two.requestId }))).toMatchObject({ escalated: false, survivors: [] })
        expect(parse(await second)).toMatchObject({ exitCode: 128 + 15 })
        const after = parse(await conn.call('list_processes', { tag: 'long' })) as Rec[]
        expect(after.map((p) => p.status)).toEqual(['terminated', 'terminated'])
        for (const pid of [one.pid, two.pid]) expect(groupMembers(pid)).toEqual([])
      }
    } finally {
      await closeAll(conns)
      server.child.kill('SIGKILL')
    }
  })

  it('get_output: a running and an ended process\'s output, paged by byte offset, for its own session only (both SDK lines); list_processes shows the duration', async () => {
    const server = await startServer(['--output-bytes', '12'])
    const conns: Conn[] = []
    try {
      const other = await connect('1', server, TOKEN_B)
      conns.push(other)
      for (const line of ['1', '2'] as const) {
        const conn = await connect(line, server)
        conns.push(conn)
        type Out = { pid: number; running: boolean; exitCode: number | null; offset: number; skipped: number; data: string; nextOffset: number; total: number; durationMs: number }
        const out = async (args: Record<string, unknown>) => parse(await conn.call('get_output', args)) as Out
        // Ended: stdout and stderr, by request id and by pid, paged.
        const done = parse(await conn.call('run_command', { command: 'sh', args: ['-c', 'echo hello; echo oops >&2; exit 3'], tags: ['done'] }))
        expect(await out({ requestId: done.requestId })).toMatchObject({ pid: done.pid, running: false, exitCode: 3, offset: 0, skipped: 0, data: 'hello\n', nextOffset: 6, total: 6 })
        expect(await out({ pid: done.pid, stream: 'stderr' })).toMatchObject({ data: 'oops\n' })
        expect(await out({ pid: done.pid, offset: 1, maxBytes: 3 })).toMatchObject({ offset: 1, data: 'ell', nextOffset: 4 })
        const [listed] = parse(await conn.call('list_processes', { tag: 'done' })) as Array<Rec & { durationMs: number | null }>
        expect(listed).toMatchObject({ status: 'exited', exitCode: 3 })
        expect(listed!.durationMs).toBeGreaterThanOrEqual(0)
        // Only the newest --output-bytes (12) are kept: what went before is reported as skipped.
        const long = parse(await conn.call('run_command', { command: 'sh', args: ['-c', 'echo 0123456789abcdefghij'] }))
        expect(await out({ pid: long.pid })).toMatchObject({ offset: 9, skipped: 9, data: '9abcdefghij\n', total: 21 })
        // Running: readable while it runs, and after it was stopped.
        const call = conn.call('run_command', { command: 'sh', args: ['-c', 'echo started; exec sleep 1000'], tags: [`live-${line}`] })
        const live = await running(conn, `live-${line}`)
        let seen: Out | undefined
        for (let i = 0; i < 200 && seen?.data !== 'started\n'; i++) {
          seen = await out({ pid: live.pid })
          if (seen.data !== 'started\n') await sleep(25)
        }
        expect(seen).toMatchObject({ running: true, exitCode: null, data: 'started\n' })
        // Another session (another token) gets "not found", as for a pid never started.
        const refused = (await other.call('get_output', { pid: live.pid })) as Result
        expect(refused.isError).toBe(true)
        expect(refused.content[0]!.text).toMatch(/no output/)
        await conn.call('terminate_process', { pid: live.pid })
        await call
        expect(await out({ pid: live.pid })).toMatchObject({ running: false, data: 'started\n' })
      }
    } finally {
      await closeAll(conns)
      server.child.kill('SIGKILL')
    }
  })

  it('/metrics: the supervisor\'s figures in Prometheus text, for a token holder only', async () => {
    const server = await startServer()
    const conns: Conn[] = []
    try {
      const conn = await connect('2', server)
      conns.push(conn)
      parse(await conn.call('run_command', { command: 'sh', args: ['-c', 'exit 3'] }))
      const metricsUrl = new URL('/metrics', server.url)
      expect((await fetch(metricsUrl)).status).toBe(401)
      expect((await fetch(metricsUrl, { headers: { Authorization: 'Bearer nope' } })).status).toBe(401)
      const res = await fetch(metricsUrl, { headers: { Authorization: `Bearer ${TOKEN}` } })
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/)
      const { family: found } = parseScrape(await res.text(), 'reapkit_supervisor_')
      const family = (name: string) => found(name)!
      expect(Number(family('starts_total').metrics[0]!.value)).toBe(1)
      expect(family('exits_total').metrics).toEqual([{ value: '1', labels: { code: '3', signal: '' } }])
      expect(family('children').metrics.find((m) => m.labels?.status === 'exited')?.value).toBe('1')
    } finally {
      await closeAll(conns)
      server.child.kill('SIGKILL')
    }
  })

  it('/metrics: the drain\'s figures beside the supervisor\'s (keepalive state, in flight, served, run durations)', async () => {
    const server = await startServer()
    const conns: Conn[] = []
    const scrape = async () => {
      const res = await fetch(new URL('/metrics', server.url), { headers: { Authorization: `Bearer ${TOKEN}` } })
      expect(res.status).toBe(200)
      const { families, family: found, value } = parseScrape(await res.text(), 'reapkit_keepalive_')
      const family = (name: string) => found(name)!
      return { family, value, supervisor: families.has('reapkit_supervisor_starts_total') }
    }
    try {
      const conn = await connect('1', server)
      conns.push(conn)
      const held = conn.call('run_command', { command: 'sleep', args: ['1000'], tags: ['held'] }).catch((e) => e)
      const proc = await running(conn, 'held')
      const during = await scrape()
      expect(during.supervisor).toBe(true)
      expect(during.value('state', { state: 'running' })).toBe(1)
      expect(during.value('state', { state: 'draining' })).toBe(0)
      expect(during.value('in_flight')).toBeGreaterThanOrEqual(1) // the run_command call
      expect(during.value('refused_total')).toBe(0)
      expect(during.value('drain_seconds')).toBe(0)
      const servedBefore = during.value('served_total')
      expect(parse(await conn.call('terminate_process', { pid: proc.pid }))).toMatchObject({ survivors: [] })
      await held
      const after = await scrape()
      expect(after.value('in_flight')).toBe(0)
      expect(after.value('served_total')).toBeGreaterThanOrEqual(servedBefore + 2) // the held call, terminate_process
      const runs = after.family('run_duration_seconds').metrics[0]!
      expect(Number(runs.count)).toBe(after.value('served_total'))
      expect(Number(runs.buckets!['+Inf'])).toBe(after.value('served_total'))
    } finally {
      await closeAll(conns)
      server.child.kill('SIGKILL')
    }
  })

  it('security: 401 without or with a wrong token, 403 for a wrong Origin or Host, 413 over the body limit, no access to another session; none of it starts a process', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'reapkit-example-http-'))
    const marker = (n: string) => join(dir, `marker-${n}`)
    // A call that would leave a file behind if it ever ran.
    const touching = (n: string, pad = 0) => runCall(`t-${n}`, 'sh', ['-c', `touch ${marker(n)}`, 'x'.repeat(pad)])
    const server = await startServer(['--max-body-bytes', '4096'])
    let a: Conn | undefined
    let b: Conn | undefined
    let rawB = ''
    try {
      a = await connect('1', server)
      const victimCall = a.call('run_command', { command: 'sleep', args: ['1000'], tags: ['victim'] }).catch((e) => e)
      const victim = await running(a, 'victim')
      const sid = a.sessionId()

      // No token, a wrong token: 401 with WWW-Authenticate: Bearer, on a new session and on a's.
      for (const headers of [{}, { 'mcp-session-id': sid }, auth('wrong'), auth('wrong', sid), auth(`${TOKEN}x`, sid)]) {
        const r = await post(server, touching('401'), headers)
        expect(r.status, JSON.stringify(headers)).toBe(401)
        expect(r.headers.get('www-authenticate')).toMatch(/^Bearer\b/)
      }
      // A browser page of another origin: 403, token or not; a local one passes.
      for (const origin of ['http://evil.example', 'null', 'http://localhost.evil.example:8080']) {
        const r = await post(server, touching('403'), { ...auth(TOKEN, sid), origin })
        expect(r.status, origin).toBe(403)
      }
      const local = await post(server, { jsonrpc: '2.0', id: 'local', method: 'tools/list' }, { ...auth(TOKEN, sid), origin: 'http://localhost:5173', 'mcp-protocol-version': '2025-06-18' })
      expect(local.status).toBe(200)
      expect(local.text).toContain('run_command')
      // DNS rebinding: a Host that is not a loopback name, while bound to 127.0.0.1.
      const rebound = await new Promise<number>((resolve, reject) => {
        const body = JSON.stringify(touching('host'))
        const req = httpRequest(
          { host: '127.0.0.1', port: server.port, path: '/mcp', method: 'POST', agent: false, headers: { host: `attacker.example:${server.port}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': Buffer.byteLength(body), ...auth(TOKEN, sid) } },
          (res) => {
            res.resume()
            resolve(res.statusCode!)
          },
        )
        req.on('error', reject)
        req.end(body)
      })
      expect(rebound).toBe(403)

      // Over the body limit: 413, told by Content-Length, and by counting a chunked body.
      const big = await post(server, touching('413', 5000), auth(TOKEN, sid))
      expect(big.status).toBe(413)
      const chunked = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(
          { host: '127.0.0.1', port: server.port, path: '/mcp', method: 'POST', agent: false, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'transfer-encoding': 'chunked', ...auth(TOKEN, sid) } },
          (res) => {
            res.resume()
            resolve(res.statusCode!)
          },
        )
        req.on('error', reject)
        const body = JSON.stringify(touching('413c', 5000))
        for (let i = 0; i < body.length; i += 1000) req.write(body.slice(i, i + 1000))
        req.end()
      })
      expect(chunked).toBe(413)

      // Another session of the same client (same token): it sees nothing of a's, and cannot stop it
      // by pid or by a's request id: the same "not found" as a pid never started.
      b = await connect('2', server)
      expect(parse(await b.call('list_processes', {}))).toEqual([])
      const byPid = (await b.call('terminate_process', { pid: victim.pid })) as Result
      const never = (await b.call('terminate_process', { pid: 4_194_305 })) as Result
      expect(byPid.isError).toBe(true)
      expect(never.isError).toBe(true)
      expect(byPid.content[0]!.text.replace(String(victim.pid), 'N')).toBe(never.content[0]!.text.replace('4194305', 'N'))
      const byRequest = (await b.call('terminate_process', { requestId: victim.requestId })) as Result
      expect(byRequest.isError).toBe(true)
      expect(byRequest.content[0]!.text).toMatch(/ERR_REAPKIT_NOT_SUPERVISED/)
      // ... nor cancel it: a raw notifications/cancelled for a's request id, on b's session.
      const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: victim.requestId, reason: 'not yours' } }
      const cancelled = await post(server, cancel, auth(TOKEN, b.sessionId()))
      expect(cancelled.status).toBe(202)
      // Another client (another valid token) on a's session id: an unknown session (404), whatever it asks.
      for (const body of [cancel, { jsonrpc: '2.0', id: 'b-list', method: 'tools/call', params: { name: 'list_processes', arguments: {} } }, touching('404')]) {
        const r = await post(server, body, auth(TOKEN_B, sid))
        expect(r.status).toBe(404)
        rawB += r.text
      }
      expect(rawB).not.toContain('sleep')
      await sleep(500)
      expect(groupMembers(victim.pid).length).toBeGreaterThan(0) // still running
      expect((parse(await a.call('list_processes', {})) as Rec[]).map((p) => [p.pid, p.status])).toEqual([[victim.pid, 'running']])
      // Nothing any refused request carried ever ran: no marker, and the server's only child is a's.
      expect(childrenOf(server.child.pid!)).toEqual([victim.pid])
      for (const n of ['401', '403', 'host', '413', '413c', '404']) expect(existsSync(marker(n)), n).toBe(false)

      // a itself can stop it.
      expect(parse(await a.call('terminate_process', { pid: victim.pid }))).toMatchObject({ survivors: [] })
      expect(parse(await victimCall)).toMatchObject({ exitCode: 128 + 15 })
    } finally {
      await closeAll([a, b])
      server.child.kill('SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('a session that ends stops its processes: DELETE, the client closing the call\'s stream (both lines)', async () => {
    const server = await startServer() // the idle timeout (10 minutes) plays no part here
    const conns: Conn[] = []
    try {
      // DELETE (terminateSession): the session's running command is stopped.
      const del = await connect('1', server)
      conns.push(del)
      const deleted = del.call('run_command', { command: 'sleep', args: ['1000'], tags: ['del'] }).catch((e) => e)
      const delRec = await running(del, 'del')
      await del.terminateSession()
      await waitFor(() => groupMembers(delRec.pid).length === 0, 10_000, 'the DELETEd session\'s process to stop')
      await del.close()
      await deleted

      // The client goes away in the middle of a call (its fetches aborted, no DELETE, no
      // notifications/cancelled): the call is cancelled all the same.
      for (const line of ['1', '2'] as const) {
        const conn = await connect(line, server)
        conns.push(conn)
        const call = conn.call('run_command', { command: 'sleep', args: ['1000'], tags: ['gone'] }).catch((e) => e)
        const rec = await running(conn, 'gone')
        await conn.close()
        await call
        await waitFor(() => groupMembers(rec.pid).length === 0, 10_000, `line ${line}: the process of a call whose stream closed to stop`)
      }
    } finally {
      await closeAll(conns)
      server.child.kill('SIGKILL')
    }
  })

  it('a session with no request and no open stream is closed after --session-idle-ms; one with its GET stream open is kept', async () => {
    const server = await startServer(['--session-idle-ms', '1000'])
    let kept: Conn | undefined
    try {
      kept = await connect('1', server) // the 1.x client keeps a GET stream open
      // A raw session, which opens no GET stream.
      const init = await post(
        server,
        { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
        auth(TOKEN),
      )
      expect(init.status).toBe(200)
      const rawSid = init.headers.get('mcp-session-id')!
      const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' }
      expect((await post(server, list, auth(TOKEN, rawSid))).status).toBe(200)
      // Each request restarts the idle time: ask less often than it lasts, until it is gone (bounded).
      const until = Date.now() + 15_000
      let status = 200
      while (status === 200 && Date.now() < until) {
        await sleep(1500)
        status = (await post(server, list, auth(TOKEN, rawSid))).status
      }
      expect(status).toBe(404)
      expect(parse(await kept.call('list_processes', {}))).toEqual([])
    } finally {
      await closeAll([kept])
      server.child.kill('SIGKILL')
    }
  })

  it('drain: SIGTERM with calls in flight on two sessions: they complete, streamed lines and all; new calls and /readyz get 503; exit 0, one report line, nothing left', async () => {
    const server = await startServer()
    let a: Conn | undefined
    let b: Conn | undefined
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const raws: Array<Awaited<ReturnType<typeof rawSocket>>> = []
    const pids: number[] = []
    try {
      a = await connect('1', server)
      b = await connect('2', server)
      expect(await get(server.port, '/readyz', agent)).toBe(200) // the agent keeps this connection
      // Two raw connections, each with a call in flight (on a's session), for the pipelined requests below.
      for (const n of [1, 2]) {
        const raw = await rawSocket(server.port)
        raws.push(raw)
        raw.socket.write(rawPost(server.port, runCall(`raw-${n}`, 'sleep', ['4'], [`raw-${n}`]), auth(TOKEN, a.sessionId())))
      }
      const streamArgs = ['-c', 'for i in 1 2 3 4 5 6 7 8 9 10; do echo line $i; sleep 0.3; done']
      const streaming = a.call('run_command', { command: 'sh', args: streamArgs, tags: ['stream'] })
      const sleeping = b.call('run_command', { command: 'sleep', args: ['4'], tags: ['sleep'] })
      for (const [conn, tag] of [[a, 'raw-1'], [a, 'raw-2'], [a, 'stream'], [b, 'sleep']] as const) pids.push((await running(conn, tag)).pid)
      await waitFor(() => a!.notes.length >= 1, 10_000, 'the first streamed line')

      server.child.kill('SIGTERM')
      // The drain has begun once readiness fails (its first moment). The listening socket keeps
      // accepting while calls are in flight, so that their cancels and answers can get in.
      await until(async () => (await get(server.port, '/readyz', false)) === 503, 10_000, 'readiness to fail')
      // New work on connections still open (pipelined behind a call in flight): 503, -32099.
      raws[0]!.socket.write(rawPost(server.port, runCall('late', 'sleep', ['1000'], ['late']), auth(TOKEN, a.sessionId())))
      raws[1]!.socket.write(`GET /readyz HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`)
      // A new call of the 1.x client: refused with 503 and -32099.
      const late = await a.call('list_processes', {}).then(
        () => null,
        (e: Error) => e,
      )
      expect(late).toBeInstanceOf(Error)
      expect(late!.message).toMatch(/503|-32099/)
      // Readiness through the connection used before: 503 (or, if that idle connection was closed at
      // the drain's start just as it was reused, a reset).
      const ready = await get(server.port, '/readyz', agent)
      expect([503, 'ECONNRESET', 'EPIPE']).toContain(ready)

      // Both calls complete, every line streamed.
      const streamed = parse(await streaming)
      expect(streamed).toMatchObject({ exitCode: 0 })
      expect(a.notes).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((i) => `line ${i}`))
      expect(parse(await sleeping)).toMatchObject({ exitCode: 0 })

      expect(await exitOf(server.child, 30_000)).toEqual({ code: 0, signal: null })
      await Promise.all(raws.map((r) => Promise.race([r.closed, sleep(5000)])))
      // raw-1's call completed, then its pipelined call was refused; raw-2's, then /readyz answered 503.
      const [one, two] = raws.map((r) => r.data())
      expect(one).toMatch(/"id":"raw-1"/)
      expect(one).toMatch(/\\"exitCode\\": 0/)
      expect(one).toMatch(/HTTP\/1\.1 503[^]*"code":-32099[^]*"id":"late"|HTTP\/1\.1 503[^]*"id":"late"[^]*"code":-32099/)
      expect(two).toMatch(/"id":"raw-2"/)
      expect(two).toMatch(/HTTP\/1\.1 503[^]*"status":"draining"/)

      const reports = reportLines(server.stderr())
      expect(reports).toHaveLength(1)
      const report = JSON.parse(reports[0]!)
      expect(report).toMatchObject({ event: 'shutdown', reason: 'SIGTERM', abandoned: 0 })
      expect(report.drained).toBeGreaterThanOrEqual(4)
      expect(report.refused).toBeGreaterThanOrEqual(1)
      for (const pid of pids) await waitFor(() => isGone(pid) && groupMembers(pid).length === 0, 10_000, `process ${pid} to be gone`)
    } finally {
      agent.destroy()
      for (const r of raws) r.socket.destroy()
      await closeAll([a, b])
      server.child.kill('SIGKILL')
    }
  })

  it('drain past the grace (GRACE_MS=1500): the call in flight gets -32099 as its last event, its process is stopped, exit 1, abandoned 1', async () => {
    const server = await startServer([], { GRACE_MS: '1500' })
    // The client's fetch, teed: what the call's SSE stream carried, as the wire had it.
    const streams: Array<Promise<string>> = []
    const teeing: typeof fetch = async (input, init) => {
      const res = await fetch(input, init)
      if (!res.body || !(res.headers.get('content-type') ?? '').includes('text/event-stream') || init?.method !== 'POST') return res
      const [mine, theirs] = res.body.tee()
      streams.push(new Response(mine).text().catch(() => ''))
      return new Response(theirs, { status: res.status, statusText: res.statusText, headers: res.headers })
    }
    let a: Conn | undefined
    try {
      a = await connect('1', server, TOKEN, teeing)
      const call = a.call('run_command', { command: 'sleep', args: ['1000'], tags: ['stuck'] }).then(
        () => null,
        (e: Error & { code?: number }) => e,
      )
      const rec = await running(a, 'stuck')
      server.child.kill('SIGTERM')
      const err = await call
      expect(err).toBeInstanceOf(Error)
      expect(err!.code).toBe(-32099)
      expect(await exitOf(server.child, 30_000)).toEqual({ code: 1, signal: null })
      // The call's stream: its last event is the error response, for that call's id.
      const texts = await Promise.all(streams)
      const stream = texts.find((t) => t.includes('"run_command"') || t.includes('-32099'))!
      const events = stream.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)))
      expect(events.at(-1)).toMatchObject({ jsonrpc: '2.0', error: { code: -32099, data: { abandoned: true } } })
      expect(typeof events.at(-1).id).toBe('number')
      const reports = reportLines(server.stderr())
      expect(reports).toHaveLength(1)
      expect(JSON.parse(reports[0]!)).toMatchObject({ event: 'shutdown', abandoned: 1 })
      await waitFor(() => groupMembers(rec.pid).length === 0, 10_000, 'the abandoned call\'s process to be stopped')
    } finally {
      await closeAll([a])
      server.child.kill('SIGKILL')
    }
  })

  it('--state-file: a server SIGKILLed with a command running; the next one on the same file stops the leftover before it listens', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'reapkit-example-http-state-'))
    const stateFile = join(dir, 'state.json')
    let a: Conn | undefined
    let second: Server | undefined
    // The native supervisor in front of the command outlives a SIGKILLed server (it watches its host
    // and stops the command after its close timeout, 30 s here): the leftover the state file is for.
    const first = await startServer(['--state-file', stateFile, '--pass-env', 'REAPKIT_CLOSE_TIMEOUT_MS'], { REAPKIT_CLOSE_TIMEOUT_MS: '30000' })
    try {
      a = await connect('1', first)
      void a.call('run_command', { command: 'sleep', args: ['1000'], tags: ['left'] }).catch(() => {})
      const rec = await running(a, 'left')
      // The sleep, under its supervisor: forked a moment after the supervisor itself runs.
      await waitFor(() => childrenOf(rec.pid).length > 0, 10_000, 'the supervisor to start the command')
      const [command] = childrenOf(rec.pid)
      expect(command).toBeGreaterThan(1)
      process.kill(first.child.pid!, 'SIGKILL')
      await exitOf(first.child)
      await a.close()
      expect(isGone(rec.pid)).toBe(false) // left behind
      expect(isGone(command!)).toBe(false)

      second = await startServer(['--state-file', stateFile])
      expect(second.stderr()).toMatch(/process-server: 1 left by a crashed run stopped/)
      expect(isGone(rec.pid)).toBe(true) // stopped before it listened
      await waitFor(() => isGone(command!), 5000, 'the leftover command to be gone')
      const b = await connect('1', second)
      try {
        expect(parse(await b.call('list_processes', {}))).toEqual([])
      } finally {
        await b.close()
      }
    } finally {
      await a?.close().catch(() => {})
      first.child.kill('SIGKILL')
      second?.child.kill('SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
