// The process server's output history (examples/process-server/output.mjs): its budget on its own
// (bookkeeping over the bytes it is given), and get_output through a real server and real processes
// (the bytes a process wrote, binary or text, paged).
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
// @ts-expect-error: an example module in plain JavaScript, without types
import { createOutputHistory, HISTORY_OVERHEAD } from '../examples/process-server/output.mjs'
import { ROOT } from './helpers'
import { connectStdioV1 } from './mcp-sdk'

type History = { write(stream: string, chunk: string | Buffer): void; end(code: number | null, signal: string | null): void }
const K = 1024
const OVERHEAD = HISTORY_OVERHEAD as number
const text = (n: number, c: string) => c.repeat(n)
const all = { offset: 0, maxBytes: 1 << 30 }

describe('examples/process-server output history', () => {
  it('keeps the newest bytes of each stream up to the per-process budget, and tells what it skipped', () => {
    const out = createOutputHistory({ perProcessBytes: 8, totalBytes: 100 * K })
    const h: History = out.start({ owner: null, pid: 10, requestId: 1 })
    h.write('stdout', 'abcdef')
    h.write('stdout', 'ghijkl')
    h.write('stderr', 'x')
    const e = out.find(null, { pid: 10 })
    expect(out.read(e, { stream: 'stdout', offset: 0, maxBytes: 100 })).toMatchObject({ offset: 4, skipped: 4, data: 'efghijkl', nextOffset: 12, total: 12, running: true })
    expect(out.read(e, { stream: 'stdout', offset: 10, maxBytes: 1 })).toMatchObject({ offset: 10, skipped: 0, data: 'k', nextOffset: 11 })
    expect(out.read(e, { stream: 'stderr', offset: 0, maxBytes: 100 })).toMatchObject({ data: 'x' })
    expect(out.read(e, { stream: 'stdout', offset: 50, maxBytes: 10 })).toMatchObject({ offset: 50, skipped: 0, data: '', nextOffset: 50, total: 12 })
    // Each stream's ring is the per-stream cap at most; the history's bookkeeping is charged too.
    expect(out.usedBytes).toBe(OVERHEAD + 16)
  })

  it('the total budget drops ended histories first, the earliest ended first; with none ended, the writer keeps fewer of its own bytes', () => {
    const out = createOutputHistory({ perProcessBytes: 4 * K, totalBytes: 3 * OVERHEAD + 10 * K })
    const a: History = out.start({ owner: 's', pid: 1, requestId: 'a' })
    const b: History = out.start({ owner: 's', pid: 2, requestId: 'b' })
    a.write('stdout', text(4 * K, 'a'))
    b.write('stdout', text(4 * K, 'b'))
    a.end(0, null)
    const c: History = out.start({ owner: 's', pid: 3, requestId: 'c' })
    c.write('stdout', text(4 * K, 'c')) // over: the ended 'a' goes
    expect(out.find('s', { requestId: 'a' })).toBeUndefined()
    expect(out.usedBytes).toBe(2 * (OVERHEAD + 4 * K))
    const d: History = out.start({ owner: 's', pid: 4, requestId: 'd' })
    d.write('stdout', text(4 * K, 'd')) // over, nothing ended: d keeps what is left (2 KiB)
    expect(out.usedBytes).toBe(3 * OVERHEAD + 10 * K)
    expect(out.read(out.find('s', { pid: 4 }), { stream: 'stdout', ...all })).toMatchObject({ skipped: 2 * K, data: text(2 * K, 'd'), total: 4 * K })
    expect(out.find('other', { pid: 4 })).toBeUndefined() // another owner's: not found
    out.forget('s')
    expect(out.usedBytes).toBe(0)
    expect(out.find('s', { pid: 2 })).toBeUndefined()
  })

  it('output written after the exit (pipes drain late) never evicts its own history, and the count stays true', () => {
    const out = createOutputHistory({ perProcessBytes: 4 * K, totalBytes: OVERHEAD + 3 * K })
    for (let round = 0; round < 5; round++) {
      const a: History = out.start({ owner: 's', pid: 100 + round, requestId: `a${round}` }) // the previous round's goes
      a.write('stdout', text(K, 'x'))
      a.end(0, null)
      a.write('stdout', text(3 * K, 'y')) // more than the budget has left, and its history is the earliest ended
      expect(out.find('s', { requestId: `a${round - 1}` })).toBeUndefined()
      const kept = out.read(out.find('s', { requestId: `a${round}` }), { stream: 'stdout', ...all })
      expect(kept).toMatchObject({ total: 4 * K, skipped: K, data: text(3 * K, 'y') })
    }
    const b: History = out.start({ owner: 's', pid: 200, requestId: 'b' })
    b.write('stdout', 'hello from a running process\n')
    expect(out.read(out.find('s', { requestId: 'b' }), { stream: 'stdout', ...all })).toMatchObject({ skipped: 0, data: 'hello from a running process\n' })
    expect(out.usedBytes).toBeLessThanOrEqual(OVERHEAD + 3 * K)
    out.forget('s')
    expect(out.usedBytes).toBe(0) // every byte charged was charged to a history still kept
    expect(out.count).toBe(0)
  })

  it('a stream at its per-stream cap evicts nothing: its ring does not grow', () => {
    const out = createOutputHistory({ perProcessBytes: 64 * K, totalBytes: 4 * OVERHEAD + 256 * K })
    const chatty: History = out.start({ owner: null, pid: 1, requestId: 'chatty' })
    chatty.write('stdout', text(64 * K, 'c'))
    for (const id of ['a', 'b', 'c']) {
      const x: History = out.start({ owner: null, pid: id.charCodeAt(0), requestId: id })
      x.write('stdout', text(64 * K, id))
      x.end(0, null)
    }
    for (let i = 0; i < 100; i++) chatty.write('stdout', 'line of log output\n')
    expect(['a', 'b', 'c'].filter((id) => out.find(null, { requestId: id }))).toEqual(['a', 'b', 'c'])
    expect(out.usedBytes).toBe(4 * OVERHEAD + 256 * K)
  })

  it('silent processes cost their bookkeeping: the budget and maxEnded bound how many histories are kept; lookups are by index', () => {
    const out = createOutputHistory({ perProcessBytes: 64 * K, totalBytes: 256 * OVERHEAD })
    for (let i = 0; i < 20_000; i++) out.start({ owner: null, pid: i, requestId: i }).end(0, null)
    expect(out.count).toBe(256)
    expect(out.usedBytes).toBe(256 * OVERHEAD)
    expect(out.find(null, { pid: 0 })).toBeUndefined()
    expect(out.find(null, { pid: 19_999 })).toBeDefined()
    const capped = createOutputHistory({ perProcessBytes: 64 * K, totalBytes: 1 << 30, maxEnded: 5 })
    for (let i = 0; i < 20; i++) capped.start({ owner: null, pid: i, requestId: i }).end(0, null)
    expect(capped.count).toBe(5)
    expect(capped.find(null, { requestId: 14 })).toBeUndefined()
    expect(capped.find(null, { requestId: 15 })).toBeDefined()
    // The newest of a recycled pid is found, and the older once the newer is gone.
    const reused = createOutputHistory({ perProcessBytes: 64, totalBytes: 1 << 20 })
    reused.start({ owner: null, pid: 7, requestId: 'old' }).end(0, null)
    reused.start({ owner: null, pid: 7, requestId: 'new' })
    expect(reused.find(null, { pid: 7 }).requestId).toBe('new')
  })

  it('a flood of 1-byte chunks takes the memory its bytes do, not a buffer per chunk', () => {
    // Measured in a child node with --expose-gc: 4 MiB of budget written a byte at a time.
    const script = `
      import { createOutputHistory } from ${JSON.stringify(join(ROOT, 'examples', 'process-server', 'output.mjs'))}
      const mem = () => (globalThis.gc(), process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers)
      const out = createOutputHistory({ perProcessBytes: 1 << 20, totalBytes: 4 << 20 })
      const m0 = mem()
      for (let p = 0; p < 4; p++) { const h = out.start({ owner: null, pid: p, requestId: p }); for (let i = 0; i < 1 << 20; i++) h.write('stdout', 'a') }
      console.log(JSON.stringify({ grew: mem() - m0, used: out.usedBytes }))`
    const r = JSON.parse(execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 120_000 }))
    expect(r.used).toBeLessThanOrEqual(4 << 20)
    expect(r.grew).toBeLessThan(24 << 20)
  }, 150_000)

  it('a read copies only the range asked for, not the whole kept stream', () => {
    const out = createOutputHistory({ perProcessBytes: 64 << 20, totalBytes: 128 << 20 })
    const h: History = out.start({ owner: null, pid: 1, requestId: 1 })
    const chunk = Buffer.alloc(64 * K, 97)
    for (let i = 0; i < 1024; i++) h.write('stdout', chunk)
    const e = out.find(null, { pid: 1 })
    const t0 = performance.now()
    for (let i = 0; i < 400; i++) expect(out.read(e, { stream: 'stdout', offset: 100 + i, maxBytes: 10 }).data).toBe('aaaaaaaaaa')
    // A copy of the 64 MiB per read would take seconds; ten bytes a read take a millisecond or so.
    expect(performance.now() - t0).toBeLessThan(1500)
  })

  it('against a model: every stream keeps exactly its newest bytes, any page reads them back, the charge is what is kept', () => {
    let seed = 1
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed % n)
    type Entry = { stdout: { capacity: number }; stderr: { capacity: number } }
    // Plain checks (an expect per byte read would take most of the test's time).
    const check = (ok: boolean, what: string) => {
      if (!ok) throw new Error(`${what} (trial ${trial}, step ${step})`)
    }
    let trial = 0
    let step = 0
    for (trial = 0; trial < 40; trial++) {
      const per = [0, 1, 7, 64, 100, 1000][rnd(6)]!
      const out = createOutputHistory({ perProcessBytes: per, totalBytes: OVERHEAD * (1 + rnd(4)) + rnd(3000), maxEnded: 1 + rnd(5) })
      const live: Array<{ id: number; h: History }> = []
      const written = new Map<number, Record<string, Buffer[]>>()
      for (step = 0; step < 150; step++) {
        const op = rnd(10)
        if (op === 0 || live.length === 0) {
          live.push({ id: step, h: out.start({ owner: 'o', pid: step, requestId: step }) })
          written.set(step, { stdout: [], stderr: [] })
        } else if (op === 1) live[rnd(live.length)]!.h.end(0, null)
        else {
          const x = live[rnd(live.length)]!
          const s = rnd(2) ? 'stdout' : 'stderr'
          const b = Buffer.from(Array.from({ length: rnd(300) }, () => rnd(256)))
          written.get(x.id)![s]!.push(b)
          x.h.write(s, b)
        }
        let charged = 0
        for (const [id, streams] of written) {
          const e = out.find('o', { pid: id }) as Entry | undefined
          if (!e) continue
          charged += OVERHEAD + e.stdout.capacity + e.stderr.capacity
          for (const s of ['stdout', 'stderr']) {
            const bytes = Buffer.concat(streams[s]!)
            const kept = out.read(e, { stream: s, ...all, encoding: 'base64' })
            check(kept.total === bytes.length, 'total')
            check(Buffer.from(kept.data, 'base64').equals(bytes.subarray(kept.offset)), 'the newest bytes kept')
            check(bytes.length - kept.offset <= per, 'the per-stream cap')
            const offset = rnd(bytes.length + 2)
            const maxBytes = 1 + rnd(20)
            const from = Math.max(offset, kept.offset)
            const page = out.read(e, { stream: s, offset, maxBytes, encoding: 'base64' })
            check(Buffer.from(page.data, 'base64').equals(bytes.subarray(from, Math.min(bytes.length, from + maxBytes))), 'a page')
          }
        }
        check(out.usedBytes === charged, `charged ${out.usedBytes}, kept ${charged}`)
      }
      out.forget('o')
      expect([out.usedBytes, out.count]).toEqual([0, 0])
    }
  })

  it('utf8 pages move their bounds off the middle of a character; base64 gives the exact bytes', () => {
    const out = createOutputHistory({ perProcessBytes: 1 * K, totalBytes: 64 * K })
    const h: History = out.start({ owner: null, pid: 1, requestId: 1 })
    const bytes = Buffer.from('aé€😀z', 'utf8') // 1, 2, 3, 4 and 1 bytes
    h.write('stdout', bytes.subarray(0, 5)) // 'aé' and the first two bytes of '€'
    const e = out.find(null, { pid: 1 })
    // Running: the incomplete '€' waits for its last byte.
    expect(out.read(e, { stream: 'stdout', ...all })).toMatchObject({ data: 'aé', nextOffset: 3 })
    h.write('stdout', bytes.subarray(5))
    expect(out.read(e, { stream: 'stdout', offset: 0, maxBytes: 2 })).toMatchObject({ data: 'a', nextOffset: 1 })
    expect(out.read(e, { stream: 'stdout', offset: 2, maxBytes: 4 })).toMatchObject({ offset: 3, skipped: 1, data: '€', nextOffset: 6 })
    expect(out.read(e, { stream: 'stdout', offset: 6, maxBytes: 1 })).toMatchObject({ data: '😀', nextOffset: 10 }) // a page holds one whole character at least
    expect(out.read(e, { stream: 'stdout', offset: 0, maxBytes: 3, encoding: 'base64' })).toMatchObject({ encoding: 'base64', data: bytes.subarray(0, 3).toString('base64'), nextOffset: 3 })
  })
})

describe('examples/process-server get_output (a real server and real processes)', () => {
  async function connect() {
    const { client } = await connectStdioV1({ command: process.execPath, args: [join(ROOT, 'examples', 'process-server', 'server.mjs'), '--allow-any'] })
    const call = async (name: string, args: Record<string, unknown>) => {
      const r = (await client.callTool({ name, arguments: args }, undefined, { timeout: 30_000 })) as { content: Array<{ text: string }>; isError?: boolean }
      if (r.isError) throw new Error(r.content[0]!.text)
      return JSON.parse(r.content[0]!.text)
    }
    return { client, call }
  }

  it('keeps the bytes a process wrote: binary exact in base64, offsets in bytes, text paged in whole characters', async () => {
    const { client, call } = await connect()
    try {
      // 4 bytes that are not UTF-8, then 'é€😀' four times (36 bytes).
      const run = await call('run_command', { command: 'sh', args: ['-c', "printf '\\200\\201\\377\\376'; for i in 1 2 3 4; do printf 'é€😀'; done"] })
      expect(run.exitCode).toBe(0)
      const expected = Buffer.concat([Buffer.from([0x80, 0x81, 0xff, 0xfe]), Buffer.from('é€😀'.repeat(4), 'utf8')])
      const raw = await call('get_output', { pid: run.pid, encoding: 'base64' })
      expect(raw).toMatchObject({ encoding: 'base64', total: expected.length, nextOffset: expected.length })
      expect(Buffer.from(raw.data, 'base64').equals(expected)).toBe(true)
      // Paged 3 bytes at a time by nextOffset: each page whole characters, together the text.
      let text = ''
      for (let offset = 4, pages = 0; offset < expected.length && pages < 100; pages++) {
        const page = await call('get_output', { pid: run.pid, offset, maxBytes: 3 })
        expect(page.data).not.toContain('\uFFFD')
        expect(page.offset).toBe(offset)
        text += page.data
        offset = page.nextOffset
      }
      expect(text).toBe('é€😀'.repeat(4))
    } finally {
      await client.close().catch(() => {})
    }
  })
})
