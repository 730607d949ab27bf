// The output a Supervisor keeps of its children (lib/policies/supervisor/output.ts), with real
// children writing real pipes: drained so an unread pipe never blocks a child, teed so a caller who
// reads child.stdout still gets every byte, kept in bounded rings per incarnation, read by offset
// (aligned to lines when asked) and followed. Every wait is bounded; every child is stopped after
// each test (cleanupAfterEach).
import { createHash } from 'node:crypto'
import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import type { OutputChunk } from '../lib/policies/supervisor/output'
import { waitFor } from './helpers'
import { cleanupAfterEach, settled } from './supervisor-cleanup'

const posix = process.platform !== 'win32'
const { supervise } = cleanupAfterEach()
const MiB = 1024 * 1024
/** A node child that writes `n` bytes of a known pattern to stdout (a line of 64 bytes at a time), then `tail`. */
const writer = (n: number, tail = '') => [
  '-e',
  `const line = Buffer.from('0123456789abcdef'.repeat(4).slice(0, 63) + '\\n'); let left = ${n};` +
    `const out = Buffer.alloc(${n}); for (let i = 0; i < ${n}; i += 64) line.copy(out, i, 0, Math.min(64, ${n} - i));` +
    `process.stdout.write(out); process.stdout.write(${JSON.stringify(tail)})`,
]
const expected = (n: number, tail = '') => {
  const line = Buffer.from(`${'0123456789abcdef'.repeat(4).slice(0, 63)}\n`)
  const out = Buffer.alloc(n)
  for (let i = 0; i < n; i += 64) line.copy(out, i, 0, Math.min(64, n - i))
  return Buffer.concat([out, Buffer.from(tail)])
}
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')

describe.runIf(posix)('Supervisor output', () => {
  it('a child that writes 1 MiB to a pipe nobody reads is drained: it exits, and its status says so', async () => {
    const { sup } = supervise()
    sup.spawn(process.execPath, writer(MiB, 'the end\n'), { requestId: 'flood' }) // default stdio: 'pipe'
    // Before: its stdout filled at 64 KiB and it blocked for ever while its status read 'running'.
    await settled(sup, 'flood', 'exited', 30_000)
    expect(sup.get('flood')?.exitCode).toBe(0)
    const page = sup.output('flood', { offset: 0, maxBytes: MiB })!
    expect(page.total).toBe(MiB + 8)
    expect(page.ended).toBe(true)
    expect(page.skipped, 'the ring keeps the newest 64 KiB (the default)').toBeGreaterThan(MiB - 64 * 1024)
    expect(page.data.toString().endsWith('the end\n')).toBe(true)
  })

  it('with output: false nothing is kept, and the pipe is still drained', async () => {
    const { sup } = supervise({ output: false })
    sup.spawn(process.execPath, writer(MiB), { requestId: 'flood' })
    await settled(sup, 'flood', 'exited', 30_000)
    expect(sup.output('flood')).toBeUndefined()
  })

  it("a caller reading child.stdout itself (a 'data' listener, pipe(), for await) still gets every byte, and the ring the same bytes", async () => {
    const { sup } = supervise({ output: { perChildBytes: 4 * MiB } })
    const want = expected(MiB, 'tail\n')
    const byData: Buffer[] = []
    const a = sup.spawn(process.execPath, writer(MiB, 'tail\n'), { requestId: 'data' })
    a.stdout!.on('data', (d: Buffer) => byData.push(d))
    const byPipe: Buffer[] = []
    const b = sup.spawn(process.execPath, writer(MiB, 'tail\n'), { requestId: 'pipe' })
    b.stdout!.pipe(new Writable({ highWaterMark: 1024, write: (d, _e, cb) => (byPipe.push(d), setImmediate(cb)) })) // a slow reader: backpressure
    const c = sup.spawn(process.execPath, writer(MiB, 'tail\n'), { requestId: 'iter' })
    const byIter = (async () => {
      const got: Buffer[] = []
      for await (const d of c.stdout!) got.push(d as Buffer)
      return Buffer.concat(got)
    })()
    for (const id of ['data', 'pipe', 'iter']) await settled(sup, id, 'exited', 30_000)
    await waitFor(() => sup.output('pipe')?.ended === true && sup.output('data')?.ended === true, 10_000, 'the pipes to close')
    expect(sha(Buffer.concat(byData))).toBe(sha(want))
    expect(sha(Buffer.concat(byPipe))).toBe(sha(want))
    expect(sha(await byIter)).toBe(sha(want))
    for (const id of ['data', 'pipe', 'iter']) {
      const page = sup.output(id, { offset: 0, maxBytes: 16 * MiB })!
      expect(page.skipped, id).toBe(0)
      expect(sha(page.data), id).toBe(sha(want))
    }
  })

  it('a reader attached after an await gets every byte the child wrote meanwhile (within the stream\'s buffer); the ring has them too', async () => {
    const { sup } = supervise()
    // The child writes, then waits for a line on stdin before its last words: no timing involved.
    const c = sup.spawn('sh', ['-c', 'echo first; read go; echo second'], { requestId: 'late' })
    await waitFor(() => sup.output('late')?.total === 6, 10_000, 'the first line to reach the ring')
    let got = ''
    c.stdout!.on('data', (d: Buffer) => (got += d.toString()))
    c.stdin!.end('go\n')
    await settled(sup, 'late', 'exited', 30_000)
    await waitFor(() => sup.output('late')?.ended === true, 10_000, 'the pipes to close')
    // Before: the tee's 'data' listener made the stream flow from the start, and 'first' was gone.
    expect(got).toBe('first\nsecond\n')
    expect(sup.output('late')!.data.toString()).toBe('first\nsecond\n')
  })

  it('a flood nobody reads is let flow once the stream\'s buffer is full (the child never blocks); a late reader gets what follows, the ring everything', async () => {
    const { sup } = supervise({ output: { perChildBytes: 4 * MiB } })
    const c = sup.spawn('sh', ['-c', `head -c ${MiB} /dev/zero; read go; echo tail`], { requestId: 'flood' })
    await waitFor(() => sup.output('flood')?.total === MiB, 30_000, 'the whole MiB to be drained, nobody reading')
    let got = ''
    c.stdout!.on('data', (d: Buffer) => (got += d.toString('latin1')))
    c.stdin!.end('go\n')
    await settled(sup, 'flood', 'exited', 30_000)
    await waitFor(() => sup.output('flood')?.ended === true, 10_000, 'the pipes to close')
    expect(got.endsWith('tail\n')).toBe(true)
    expect(got.length, 'at most what the stream still held').toBeLessThanOrEqual(c.stdout!.readableHighWaterMark + 5)
    const page = sup.output('flood', { maxBytes: 2 * MiB })!
    expect([page.skipped, page.total]).toEqual([0, MiB + 5])
  })

  it("a stream the caller paused stays paused (the child waits on it); resumed, every byte comes", async () => {
    const { sup } = supervise({ output: { perChildBytes: 4 * MiB } })
    const c = sup.spawn('head', ['-c', String(MiB), '/dev/zero'], { requestId: 'paused' })
    c.stdout!.pause()
    await waitFor(() => (sup.output('paused')?.total ?? 0) >= c.stdout!.readableHighWaterMark, 10_000, 'the stream buffer to fill')
    await new Promise((r) => setTimeout(r, 300))
    // Had the store let it flow, the MiB would be through in a few ms.
    expect(sup.output('paused')!.total).toBeLessThan(MiB)
    expect(sup.get('paused')?.status).toBe('running')
    let got = 0
    c.stdout!.on('data', (d: Buffer) => (got += d.length))
    c.stdout!.resume()
    await settled(sup, 'paused', 'exited', 30_000)
    await waitFor(() => sup.output('paused')?.ended === true, 10_000, 'the pipes to close')
    expect([got, sup.output('paused')!.total]).toEqual([MiB, MiB])
  })

  it('the ring keeps the bytes as the pipe gave them, whatever setEncoding() the caller set', async () => {
    const { sup } = supervise()
    const c = sup.spawn('printf', ['\\377\\303\\251'], { requestId: 'enc' })
    c.stdout!.setEncoding('utf8')
    let text = ''
    c.stdout!.on('data', (d: string) => (text += d))
    await settled(sup, 'enc', 'exited', 30_000)
    await waitFor(() => sup.output('enc')?.ended === true, 10_000, 'the pipes to close')
    expect(text).toBe('\ufffdé')
    expect([...sup.output('enc')!.data]).toEqual([0xff, 0xc3, 0xa9])
  })

  it('many followers: no MaxListenersExceededWarning, and each gets what its own child writes', async () => {
    const { sup } = supervise()
    const warnings: string[] = []
    const onWarning = (w: Error) => warnings.push(w.name)
    process.on('warning', onWarning)
    try {
      const ids = ['w0', 'w1', 'w2', 'w3']
      const children = ids.map((id) => sup.spawn('sh', ['-c', `read go; echo "${id}"`], { requestId: id }))
      const acs = Array.from({ length: 15 }, () => new AbortController())
      const guard = setTimeout(() => acs.forEach((ac) => ac.abort()), 30_000)
      // 15 followers (an emitter or a signal warns past 10 listeners), several per child.
      const follows = acs.map(async (ac, i) => {
        let text = ''
        for await (const page of sup.followOutput(ids[i % ids.length]!, { signal: ac.signal, fromStart: true })) text += page.data.toString()
        return text
      })
      for (const c of children) c.stdin!.end('go\n')
      const results = await Promise.all(follows)
      clearTimeout(guard)
      expect(acs.some((ac) => ac.signal.aborted), 'each follow ended with its child').toBe(false)
      expect(results).toEqual(Array.from({ length: 15 }, (_, i) => `${ids[i % ids.length]}\n`))
      await new Promise((r) => setImmediate(r))
      expect(warnings).not.toContain('MaxListenersExceededWarning')
    } finally {
      process.off('warning', onWarning)
    }
  })

  it("'output' events carry every chunk, in order, with its offset", async () => {
    const { sup } = supervise({ output: { perChildBytes: 1024 } })
    const chunks: OutputChunk[] = []
    sup.on('output', (c) => chunks.push(c))
    sup.spawn(process.execPath, writer(256 * 1024), { requestId: 'ev' })
    await settled(sup, 'ev', 'exited', 30_000)
    await waitFor(() => sup.output('ev')?.ended === true, 10_000, 'the pipes to close')
    const out = chunks.filter((c) => c.stream === 'stdout')
    let at = 0
    for (const c of out) {
      expect(c.offset).toBe(at)
      at += c.data.length
    }
    expect(sha(Buffer.concat(out.map((c) => c.data)))).toBe(sha(expected(256 * 1024)))
  })

  it('reads by offset: skipped says what the ring dropped, nextOffset continues; lines never end mid-line', async () => {
    const { sup } = supervise({ output: { perChildBytes: 4096 } })
    sup.spawn('sh', ['-c', 'for i in $(seq 1 500); do echo "line $i"; done; printf "no newline"; echo oops >&2'], { requestId: 'lines' })
    await settled(sup, 'lines', 'exited', 30_000)
    await waitFor(() => sup.output('lines')?.ended === true, 10_000, 'the pipes to close')
    const all = sup.output('lines', { maxBytes: 1 << 20 })!
    expect(all.total).toBe(Buffer.byteLength(Array.from({ length: 500 }, (_, i) => `line ${i + 1}\n`).join('') + 'no newline'))
    expect(all.skipped).toBe(all.total - all.data.length)
    expect(all.data.length).toBeLessThanOrEqual(4096)
    // Lines: a start the ring cut mid-line moves to the next line; an end never splits one.
    const page = sup.output('lines', { offset: 0, maxBytes: 100, align: 'lines' })!
    const text = page.data.toString()
    expect(text).toMatch(/^line \d+\n/)
    expect(text.endsWith('\n')).toBe(true)
    const next = sup.output('lines', { offset: page.nextOffset, maxBytes: 100, align: 'lines' })!
    expect(next.skipped).toBe(0)
    expect(Number(/^line (\d+)/.exec(next.data.toString())![1])).toBe(Number(/line (\d+)\n$/.exec(text)![1]) + 1)
    // The ended stream's last line needs no newline.
    const last = sup.output('lines', { offset: all.total - 20, align: 'lines' })!
    expect(last.data.toString().endsWith('no newline')).toBe(true)
    expect(sup.output('lines', { stream: 'stderr' })!.data.toString()).toBe('oops\n')
  })

  it('keeps each incarnation apart across restarts, the newest by default', async () => {
    const { sup } = supervise()
    sup.spawn('sh', ['-c', 'echo "run $$"; exit 1'], { requestId: 'crashy', restart: 'on-failure', backoff: { initialMs: 50, jitter: 0 }, intensity: { maxRestarts: 2, windowMs: 60_000 } })
    await settled(sup, 'crashy', 'given-up', 30_000)
    const r = sup.get('crashy')!
    expect(r.incarnations).toHaveLength(3)
    await waitFor(() => [0, 1, 2].every((n) => sup.output('crashy', { incarnation: n })?.ended), 10_000, 'every pipe to close')
    for (const [n, inc] of r.incarnations.entries()) {
      const page = sup.output('crashy', { incarnation: n })!
      expect(page.incarnation).toBe(n)
      expect(page.pid).toBe(inc.pid)
      expect(page.data.toString()).toBe(`run ${inc.pid}\n`)
    }
    expect(sup.output('crashy')!.incarnation).toBe(2)
  })

  it("the supervisor's bound drops ended children's output first, the earliest ended first; a child's own bound its oldest incarnations", async () => {
    const { sup } = supervise({ output: { perChildBytes: 16 * 1024, totalBytes: 40 * 1024 } })
    for (const id of ['a', 'b']) {
      sup.spawn(process.execPath, writer(16 * 1024 - 600), { requestId: id })
      await settled(sup, id, 'exited', 30_000)
      await waitFor(() => sup.output(id)?.ended === true, 10_000, `${id}'s pipes to close`)
    }
    expect(sup.output('a')?.total).toBe(16 * 1024 - 600)
    sup.spawn(process.execPath, ['-e', `process.stdout.write(Buffer.alloc(${16 * 1024 - 600}, 'c')); setInterval(() => {}, 1000)`], { requestId: 'c' })
    await waitFor(() => (sup.output('c')?.total ?? 0) === 16 * 1024 - 600, 30_000, 'c to write')
    expect(sup.output('a'), "a ended first: it goes first").toBeUndefined()
    expect(sup.output('b')?.total).toBe(16 * 1024 - 600)
    expect(sup.output('c')!.skipped).toBe(0)
    // A child's own bound: 16 KiB for all its incarnations, the ended ones dropped first.
    sup.spawn('sh', ['-c', `head -c 9000 /dev/zero; exit 1`], { requestId: 'loop', restart: 'on-failure', backoff: { initialMs: 20, jitter: 0 }, intensity: { maxRestarts: 3, windowMs: 60_000 } })
    await settled(sup, 'loop', 'given-up', 30_000)
    await waitFor(() => sup.output('loop')?.ended === true, 10_000, 'the last pipe to close')
    expect(sup.output('loop', { incarnation: 0 })).toBeUndefined()
    expect(sup.output('loop', { incarnation: 3 })?.total).toBe(9000)
  })

  it('followOutput gives what follows, across a restart, and ends when the child is over', async () => {
    const { sup } = supervise()
    sup.spawn('sh', ['-c', 'sleep 0.3; echo "one $$"; sleep 0.2; echo "two $$"; exit 1'], {
      requestId: 'f', restart: 'on-failure', backoff: { initialMs: 50, jitter: 0 }, intensity: { maxRestarts: 1, windowMs: 60_000 },
    })
    const ac = new AbortController()
    const guard = setTimeout(() => ac.abort(), 30_000)
    const got: string[] = []
    for await (const page of sup.followOutput('f', { signal: ac.signal, align: 'lines' })) got.push(`${page.incarnation}:${page.data.toString()}`)
    clearTimeout(guard)
    expect(ac.signal.aborted, 'ended by itself, not by the guard').toBe(false)
    const [p0, p1] = sup.get('f')!.incarnations.map((i) => i.pid)
    expect(got.join('')).toBe(`0:one ${p0}\n0:two ${p0}\n1:one ${p1}\n1:two ${p1}\n`)
  })

  it('bad input: a TypeError or RangeError before anything is read', () => {
    const { sup } = supervise()
    expect(() => sup.output({} as never)).toThrow(TypeError)
    expect(() => sup.output('x', { stream: 'stdin' as never })).toThrow(TypeError)
    expect(() => sup.output('x', { maxBytes: 0 })).toThrow(RangeError)
    expect(() => sup.output('x', { align: 'words' as never })).toThrow(TypeError)
    expect(() => supervise({ output: { perChildBytes: -1 } })).toThrow(RangeError)
  })

  it('bad signal or fromStart: followOutput and changes reject at the first next() with a TypeError that names the option', async () => {
    const { sup } = supervise()
    sup.spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { requestId: 'quiet' })
    // Before: `TypeError: s.addEventListener is not a function`, from inside.
    await expect(sup.changes({ signal: 1 as never }).next()).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE', message: expect.stringContaining('"signal" option') })
    await expect(sup.followOutput('quiet', { signal: {} as never }).next()).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE', message: expect.stringContaining('"signal" option') })
    await expect(sup.followOutput('quiet', { fromStart: 'yes' as never }).next()).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE', message: expect.stringContaining('"fromStart" option') })
  })
})
