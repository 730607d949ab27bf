// reapkit/mcp's StdioClientTransport as a drop-in for the SDK's (issue 19 item 2): the SDK's close
// budget, a restart after close(), onclose once, start() and send() failing as the SDK's do, the
// messages that reach onmessage, and the 2.x client's version negotiation. Real servers (a raw
// JSON-RPC peer, test/fixtures/stdio-peer.cjs) under real SDK clients where a client is involved.
import { SdkError } from '@modelcontextprotocol/client'
import type { ChildProcess } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import { StdioClientTransport } from '../lib/mcp'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { FIXTURES, isGone, killChildren, ROOT, trackGroup, waitFor } from './helpers'
import { newClient, StdioClientTransportV1, StdioClientTransportV2, trackSdkServer } from './mcp-sdk'

const linux = process.platform === 'linux'
const peer = (mode: string) => ({ command: process.execPath, args: [`${FIXTURES}/stdio-peer.cjs`, mode], stderr: 'pipe' as const })
/** Everything `stream` gives until its end, or a rejection after `ms` (the stream never ended). */
async function readToEnd(stream: unknown, ms = 10_000): Promise<string> {
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no 'end' within ${ms} ms`)), ms)))
  const read = (async () => {
    let text = ''
    for await (const chunk of stream as AsyncIterable<Buffer>) text += chunk.toString()
    return text
  })()
  try {
    return await Promise.race([read, bound])
  } finally {
    clearTimeout(timer)
  }
}
/** The SDK's own transports' servers (plain children of this process): killed after each test. */
const sdkServers = new Set<ChildProcess>()
afterEach(async () => {
  await killChildren(sdkServers)
})
const initialize = { jsonrpc: '2.0' as const, id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }

/** Starts a transport and registers its server's group for the cleanup. */
async function started(t: StdioClientTransport): Promise<number> {
  await t.start()
  trackGroup(t.pid!)
  return t.pid!
}

describe.runIf(linux)('StdioClientTransport: a drop-in for the SDK\'s', () => {
  it('closes a server that ignores stdin end and SIGTERM within the SDK\'s budget (2 s + 2 s, then SIGKILL), not the library\'s 9 s grace', async () => {
    const t = new StdioClientTransport(peer('hang'))
    const pid = await started(t)
    await t.send(initialize)
    const t0 = Date.now()
    await t.close()
    const took = Date.now() - t0
    expect(isGone(pid)).toBe(true)
    expect(took).toBeGreaterThanOrEqual(3500) // both waits were given
    expect(took).toBeLessThan(9000) // before: 11 s (2 s + the 9 s grace)
  })

  it('started again after close(), its second server is stopped by the second close(); onclose once per start', async () => {
    const t = new StdioClientTransport(peer('legacy'), { closeTimeoutMs: 500 })
    let closes = 0
    t.onclose = () => closes++
    const first = await started(t)
    await t.close()
    expect(isGone(first)).toBe(true)
    expect(t.pid).toBe(null)
    const second = await started(t)
    expect(second).not.toBe(first)
    await t.close()
    expect(isGone(second), 'the second server').toBe(true)
    await new Promise((r) => setTimeout(r, 100))
    expect(closes).toBe(2)
  })

  it('onclose fires once when a setsid helper outside the server\'s group holds its stdout', async () => {
    const t = new StdioClientTransport(peer('helper'), { closeTimeoutMs: 300, graceMs: 500 })
    let helper = 0
    ;(t.stderr as unknown as NodeJS.ReadableStream).on('data', (b: Buffer) => {
      const m = /"helper":(\d+)/.exec(b.toString())
      if (m) {
        helper = Number(m[1])
        trackGroup(helper) // its own session and group: the cleanup kills it
      }
    })
    let closes = 0
    t.onclose = () => closes++
    await started(t)
    await t.send(initialize)
    await waitFor(() => helper > 0, 10_000, 'the helper')
    await t.close()
    expect(closes).toBe(1)
    process.kill(helper, 'SIGKILL') // now the child's 'close' event comes: still no second onclose
    await waitFor(() => isGone(helper), 10_000, 'the helper to go')
    await new Promise((r) => setTimeout(r, 200))
    expect(closes).toBe(1)
  })

  it('start() on a started transport rejects (no synchronous throw); send() before start() rejects', async () => {
    const t = new StdioClientTransport(peer('legacy'), { closeTimeoutMs: 500 })
    await expect(t.send(initialize)).rejects.toThrow('Not connected')
    await started(t)
    let promise: Promise<void> | undefined
    expect(() => (promise = t.start())).not.toThrow()
    await expect(promise).rejects.toThrow(/already started/)
    await t.close()
  })

  it('with the 2.x client, send() when not connected rejects with the SDK\'s SdkError NOT_CONNECTED', async () => {
    const t = new StdioClientTransport(peer('legacy'))
    t.setSupportedProtocolVersions(['2025-06-18']) // what the 2.x Protocol does before start()
    const err = await t.send(initialize).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(SdkError)
    expect((err as { code: string }).code).toBe('NOT_CONNECTED')
  })

  it('JSON that is not JSON-RPC goes to onerror, never onmessage; stdout noise goes to onerror with 1.x and is skipped with 2.x (each case against the SDK: mcp-stdio-messages.test.ts)', async () => {
    for (const line of [1, 2] as const) {
      const t = new StdioClientTransport(peer('noise'), { closeTimeoutMs: 500 })
      if (line === 2) t.setSupportedProtocolVersions(['2025-06-18'])
      const messages: unknown[] = []
      const errors: string[] = []
      t.onmessage = (m) => messages.push(m)
      t.onerror = (e) => errors.push(e.message)
      await started(t)
      await t.send(initialize)
      await waitFor(() => messages.length === 2, 10_000, 'the initialize result and the notification')
      expect(messages.every((m) => (m as { jsonrpc: string }).jsonrpc === '2.0'), `${line}.x`).toBe(true)
      expect(errors.length, `${line}.x: ${errors.join(' | ')}`).toBe(line === 1 ? 2 : 1)
      await t.close()
    }
  })

  it('the 2.x client with versionNegotiation \'auto\' connects to a legacy server that exits on any request before initialize', async () => {
    const t = new StdioClientTransport(peer('legacy'), { closeTimeoutMs: 500 })
    const client = newClient(2, undefined, { versionNegotiation: { mode: 'auto' } })
    await client.connect(t as never)
    trackGroup(t.pid!)
    const tools = await (client as unknown as { listTools(): Promise<{ tools: unknown[] }> }).listTools()
    expect(tools.tools).toEqual([])
    const pid = t.pid!
    await client.close()
    expect(isGone(pid)).toBe(true)
  })

  it('_dispose() (the 2.x probe reaper) does not wait on a helper that holds the server\'s stdout, and destroys our pipe ends', async () => {
    const t = new StdioClientTransport(peer('helper'))
    let helper = 0
    ;(t.stderr as unknown as NodeJS.ReadableStream).on('data', (b: Buffer) => {
      const m = /"helper":(\d+)/.exec(b.toString())
      if (m) trackGroup((helper = Number(m[1])))
    })
    const pid = await started(t)
    await t.send(initialize)
    await waitFor(() => helper > 0, 10_000, 'the helper')
    const t0 = Date.now()
    await t._dispose()
    expect(Date.now() - t0).toBeLessThan(10_000) // the helper holds the pipe for 30 s
    expect(isGone(pid)).toBe(true)
    expect(isGone(helper)).toBe(false) // outside the group: not ours to stop here
    expect(t.pid).toBe(null)
    process.kill(helper, 'SIGKILL')
  })

  it('close() lets go of the server at once, as the SDK\'s: send() meanwhile rejects, start() runs a new server', async () => {
    const t = new StdioClientTransport({ ...peer('hang'), stderr: 'pipe' }, { closeTimeoutMs: 300, graceMs: 300 })
    const lines: string[] = []
    ;(t.stderr as unknown as NodeJS.ReadableStream).on('data', (b: Buffer) => lines.push(b.toString()))
    const first = await started(t)
    await t.send(initialize)
    const closing = t.close() // not awaited
    await expect(t.send(initialize)).rejects.toThrow('Not connected')
    expect(t.close()).toBe(closing) // a close() meanwhile: the same one
    const second = await started(t) // resolves while the first server is still being stopped
    expect(second).not.toBe(first)
    await closing
    expect(isGone(first)).toBe(true)
    expect(isGone(second)).toBe(false)
    // The second server's stderr still reaches the transport's stream (the first one's end did not end it).
    await t.send(initialize)
    await waitFor(() => lines.join('').includes(`peer ${second} initialized`), 10_000, "the second server's stderr")
    expect(lines.join('')).toContain(`peer ${first} initialized`)
    await t.close()
    expect(isGone(second)).toBe(true)
  })

  it('the built reapkit/mcp entry loads the host\'s own SDK at run time, never a bundled copy', () => {
    const built = readFileSync(join(ROOT, 'dist', 'cjs', 'mcp.js'), 'utf8')
    expect(built).not.toContain('mcp.SdkError') // the 2.x SdkError's brand: a bundled client would carry it
    expect(built.length).toBeLessThan(200_000) // 1.49 MB when the 2.x client was bundled in
  })

  it('1.x Client.connect() on the same transport after close() starts and later stops a second server', async () => {
    const t = new StdioClientTransport(peer('legacy'), { closeTimeoutMs: 500 })
    for (let round = 0; round < 2; round++) {
      const client = newClient(1)
      await client.connect(t as never)
      const pid = t.pid!
      trackGroup(pid)
      await client.close()
      expect(isGone(pid), `round ${round}`).toBe(true)
    }
  })

  it("with stderr: 'pipe', `for await` over transport.stderr finishes after close(), as the SDK's does, having read the server's stderr", async () => {
    const t = new StdioClientTransport(peer('legacy'), { closeTimeoutMs: 500 })
    const text = readToEnd(t.stderr)
    const pid = await started(t)
    await t.send(initialize)
    await t.close() // the server reads initialize before the stdin end behind it
    expect(await text).toContain(`peer ${pid} initialized`)
  })

  it("transport.stderr ends when the server leaves on its own, and again (a fresh stream) after a start that follows; a helper holding the pipe does not keep it open past close()", async () => {
    const t = new StdioClientTransport(peer('legacy'), { closeTimeoutMs: 300, graceMs: 300 })
    const first = t.stderr
    const firstText = readToEnd(first)
    await started(t)
    await t.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) // legacy: exits on a request before initialize
    expect(await firstText).toBe('')
    await waitFor(() => t.pid === null, 10_000, 'the server to be let go')
    const second = await started(t)
    expect(t.stderr, 'a stream that ended is not written again').not.toBe(first)
    const secondText = readToEnd(t.stderr)
    await t.send(initialize)
    await t.close()
    expect(await secondText).toContain(`peer ${second} initialized`)

    const h = new StdioClientTransport(peer('errhelper'), { closeTimeoutMs: 300, graceMs: 300 })
    let helper = 0
    const lines: string[] = []
    ;(h.stderr as unknown as NodeJS.ReadableStream).on('data', (b: Buffer) => {
      lines.push(b.toString())
      const m = /"helper":(\d+)/.exec(b.toString())
      if (m) trackGroup((helper = Number(m[1])))
    })
    const ended = readToEnd(h.stderr)
    await started(h)
    await h.send(initialize)
    await waitFor(() => helper > 0, 10_000, 'the helper')
    await h.close()
    expect(isGone(helper), 'the helper still holds the stderr pipe').toBe(false)
    await ended
    process.kill(helper, 'SIGKILL')
  })

  it("an empty command: the constructor takes it and start() rejects with the SDK's error (both lines)", async () => {
    const ours = new StdioClientTransport({ command: '' })
    const mine = await ours.start().then(() => null, (e: NodeJS.ErrnoException) => [e.name, e.code, e.message])
    for (const Sdk of [StdioClientTransportV1, StdioClientTransportV2] as Array<typeof StdioClientTransportV2>) {
      const sdk = new Sdk({ command: '' })
      const theirs = await sdk.start().then(() => null, (e: NodeJS.ErrnoException) => [e.name, e.code, e.message])
      expect(mine).toEqual(theirs)
    }
    expect(mine?.[1]).toBe('ERR_INVALID_ARG_VALUE')
    expect(() => new StdioClientTransport({ command: 7 as unknown as string })).toThrow(TypeError) // not a string: still the constructor's
  })

  // Review of issue 32 item 4: an onmessage that threw was an uncaught exception in the host, and
  // the lines behind it in the same chunk were held back until the server wrote again.
  it("an onmessage that throws goes to onerror and the lines behind it in the chunk still arrive, as with the SDK's transport (1.x and 2.x)", async () => {
    // stdio-lines.cjs writes all its lines in one write: one chunk for the transport.
    const lines = ['a', 'b', 'c'].map((method) => JSON.stringify({ jsonrpc: '2.0', method }))
    const params = { command: process.execPath, args: [join(FIXTURES, 'stdio-lines.cjs'), JSON.stringify(lines)], stderr: 'pipe' as const }
    type Events = { onmessage?: (m: never) => void; onerror?: (e: Error) => void; start(): Promise<void>; close(): Promise<void> }
    const run = async (t: Events, what: string): Promise<string[]> => {
      const events: string[] = []
      t.onmessage = ((m: { method: string }) => {
        events.push(`message ${m.method}`)
        if (m.method === 'a') throw new Error('the host\'s bug on a')
      }) as never
      t.onerror = (e) => events.push(`error ${e.message}`)
      await t.start()
      await waitFor(() => events.includes('message c'), 10_000, `${what}: the lines after the throw`)
      await t.close()
      return events
    }
    const want = ['message a', "error the host's bug on a", 'message b', 'message c']
    for (const line of [1, 2] as const) {
      const Sdk = (line === 1 ? StdioClientTransportV1 : StdioClientTransportV2) as typeof StdioClientTransportV2
      expect(await run(trackSdkServer(new Sdk(params), sdkServers) as never, `the SDK's ${line}.x`)).toEqual(want)
      const ours = new StdioClientTransport(params, { closeTimeoutMs: 500 })
      if (line === 2) ours.setSupportedProtocolVersions(['2025-06-18'])
      const start = ours.start.bind(ours)
      ours.start = async () => {
        await start()
        trackGroup(ours.pid!)
      }
      expect(await run(ours as never, `ours, ${line}.x`)).toEqual(want)
    }
  })

  // Review of issue 32 item 4: close() right after a start() that failed rejected "never spawned",
  // and every close() after it returned that same rejection; the SDK's resolves.
  it("close() after a start() that failed (ENOENT) resolves, and so does every later one, as the SDK's; onclose once, stderr ends", async () => {
    for (const line of [1, 2] as const) {
      const t = new StdioClientTransport({ command: '/nonexistent/reapkit-no-such-server', stderr: 'pipe' })
      const client = newClient(line)
      await expect(client.connect(t as never)).rejects.toMatchObject({ code: 'ENOENT' })
      await expect(client.close(), `${line}.x Client.close()`).resolves.toBeUndefined()
      await expect(t.close()).resolves.toBeUndefined()
      await expect(t.close()).resolves.toBeUndefined()
    }
    // close() before the failed start() has even settled (its 'error' is yet to come).
    const t = new StdioClientTransport({ command: '/nonexistent/reapkit-no-such-server', stderr: 'pipe' })
    let closes = 0
    t.onclose = () => closes++
    t.onerror = () => {}
    const ended = readToEnd(t.stderr, 5000)
    const starting = t.start()
    await expect(t.close()).resolves.toBeUndefined()
    await expect(starting).rejects.toMatchObject({ code: 'ENOENT' })
    await expect(t.close()).resolves.toBeUndefined()
    expect(await ended).toBe('')
    await waitFor(() => closes > 0, 5000, 'onclose')
    await new Promise((r) => setTimeout(r, 100))
    expect(closes).toBe(1)
  })

  it('an empty command: close() after the rejected start() ends transport.stderr (no server ever ran to end it)', async () => {
    const t = new StdioClientTransport({ command: '', stderr: 'pipe' })
    const ended = readToEnd(t.stderr, 5000) // before: never ended
    await expect(t.start()).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' })
    await t.close()
    expect(await ended).toBe('')
  })
})
