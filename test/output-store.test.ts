// The Supervisor's output rings and their bounds (lib/policies/supervisor/output.ts) as a data
// structure: the bookkeeping over the chunks it is given, checked against a model. The streams are
// plain Readables given chunks by push() (where the store tees them), so each step is synchronous;
// the same store under real children and pipes is test/supervisor-output.test.ts. (These checks
// were the example server's, when it kept a history of its own.)
import type { ChildProcess } from 'node:child_process'
import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { INCARNATION_OVERHEAD as OVERHEAD, OutputStore } from '../lib/policies/supervisor/output'
import { StreamRing } from '../lib/policies/supervisor/output-ring'

const K = 1024
const all = { offset: 0, maxBytes: 16 * 1024 * 1024 }
/** A stand-in child: two Readables where its pipes would be, pushed to as a pipe's socket is. */
function child(pid: number) {
  const stdout = new Readable({ read() {} })
  const stderr = new Readable({ read() {} })
  let ended = false
  /** false once ended: a pipe delivers nothing after its end. */
  const write = (s: 'stdout' | 'stderr', d: string | Buffer): boolean => !ended && ((s === 'stdout' ? stdout : stderr).push(Buffer.isBuffer(d) ? d : Buffer.from(d)), true)
  const end = () => void (ended || ((ended = true), stdout.push(null), stderr.push(null)))
  return { child: { pid, stdout, stderr } as unknown as ChildProcess, write, end }
}

describe('OutputStore', () => {
  it("keeps the newest bytes of a child up to its bound, and tells what it skipped", () => {
    const out = new OutputStore({ perChildBytes: 8, totalBytes: 100 * K })
    const owner = {}
    const c = child(10)
    out.attach(owner, c.child, 0)
    c.write('stdout', 'abcdef')
    c.write('stdout', 'ghijkl')
    expect(out.read(owner, { offset: 0, maxBytes: 100 })).toMatchObject({ offset: 4, skipped: 4, nextOffset: 12, total: 12, ended: false, pid: 10, incarnation: 0 })
    expect(out.read(owner, all)!.data.toString()).toBe('efghijkl')
    expect(out.read(owner, { offset: 10, maxBytes: 1 })).toMatchObject({ offset: 10, skipped: 0, nextOffset: 11 })
    expect(out.read(owner, { offset: 50, maxBytes: 10 })).toMatchObject({ offset: 50, skipped: 0, nextOffset: 50, total: 12 })
    c.write('stderr', 'x') // the child's bound is shared: stdout gives back what it holds beyond half of it
    expect(out.read(owner, { stream: 'stderr', ...all })!.data.toString()).toBe('x')
    expect(out.read(owner, all)!.data.toString()).toBe('ijkl')
    expect(out.usedBytes).toBe(OVERHEAD + 8)
  })

  it("the supervisor's bound drops ended incarnations first, the earliest ended first; with none ended, the writer keeps fewer of its own bytes", () => {
    const out = new OutputStore({ perChildBytes: 4 * K, totalBytes: 3 * OVERHEAD + 10 * K })
    const [oa, ob, oc, od] = [{}, {}, {}, {}]
    const a = child(1)
    const b = child(2)
    out.attach(oa, a.child, 0)
    out.attach(ob, b.child, 0)
    a.write('stdout', 'a'.repeat(4 * K))
    b.write('stdout', 'b'.repeat(4 * K))
    a.end()
    const c = child(3)
    out.attach(oc, c.child, 0)
    c.write('stdout', 'c'.repeat(4 * K)) // over: the ended a goes
    expect(out.read(oa)).toBeUndefined()
    expect(out.usedBytes).toBe(2 * (OVERHEAD + 4 * K))
    const d = child(4)
    out.attach(od, d.child, 0)
    d.write('stdout', 'd'.repeat(4 * K)) // over, nothing ended: d keeps what is left (2 KiB)
    expect(out.usedBytes).toBe(3 * OVERHEAD + 10 * K)
    expect(out.read(od, all)).toMatchObject({ skipped: 2 * K, total: 4 * K })
  })

  it('a read copies only the range asked for, not the whole ring', () => {
    const out = new OutputStore({ perChildBytes: 64 << 20, totalBytes: 128 << 20 })
    const owner = {}
    const c = child(1)
    out.attach(owner, c.child, 0)
    const chunk = Buffer.alloc(64 * K, 97)
    for (let i = 0; i < 1024; i++) c.write('stdout', chunk)
    const t0 = performance.now()
    for (let i = 0; i < 400; i++) expect(out.read(owner, { offset: 100 + i, maxBytes: 10 })!.data.toString()).toBe('aaaaaaaaaa')
    // A copy of the 64 MiB per read would take seconds; ten bytes a read take a millisecond or so.
    expect(performance.now() - t0).toBeLessThan(1500)
  })

  it('utf8 pages move their bounds off the middle of a character; an open stream keeps an incomplete one for later', () => {
    const out = new OutputStore({ perChildBytes: K, totalBytes: 64 * K })
    const owner = {}
    const c = child(1)
    out.attach(owner, c.child, 0)
    const bytes = Buffer.from('aé€😀z', 'utf8') // 1, 2, 3, 4 and 1 bytes
    c.write('stdout', bytes.subarray(0, 5)) // 'aé' and the first two bytes of '€'
    const page = (o: object) => {
      const p = out.read(owner, { align: 'utf8', ...o })!
      return { offset: p.offset, skipped: p.skipped, data: p.data.toString(), nextOffset: p.nextOffset }
    }
    expect(page(all)).toMatchObject({ data: 'aé', nextOffset: 3 })
    c.write('stdout', bytes.subarray(5))
    expect(page({ offset: 0, maxBytes: 2 })).toMatchObject({ data: 'a', nextOffset: 1 })
    expect(page({ offset: 2, maxBytes: 4 })).toMatchObject({ offset: 3, skipped: 1, data: '€', nextOffset: 6 })
    expect(page({ offset: 6, maxBytes: 1 })).toMatchObject({ data: '😀', nextOffset: 10 }) // one whole character at least
  })

  it("'lines' after the ring wrapped starts at a whole line, written one line per write (the byte before the oldest kept is remembered)", () => {
    // Before: the byte before the oldest kept was read from the ring itself, where it is the newest
    // byte (a newline): a page could start with the tail of a line.
    const bad: string[] = []
    for (const cap of [16, 32, 64]) {
      for (let len = 3; len <= 12; len++) {
        const ring = new StreamRing()
        ring.resize(cap)
        let all = ''
        for (let i = 0; i < 40; i++) {
          const line = `${String(i).padStart(2, '0')}${'-'.repeat(len - 3)}\n`.slice(-len)
          ring.write(Buffer.from(line))
          all += line
          const page = ring.read(0, 1000, 'lines')
          const kept = all.slice(ring.start)
          const want = ring.start === 0 || all[ring.start - 1] === '\n' ? kept : kept.slice(kept.indexOf('\n') + 1)
          if (page.data.toString() !== want) bad.push(`cap ${cap}, line ${len}, write ${i}: ${JSON.stringify(page.data.toString())} for ${JSON.stringify(want)}`)
        }
        ring.resize(cap / 2 + 1) // giving memory back drops bytes too
        const kept = all.slice(ring.start)
        const want = all[ring.start - 1] === '\n' ? kept : kept.slice(kept.indexOf('\n') + 1)
        if (ring.read(0, 1000, 'lines').data.toString() !== want) bad.push(`cap ${cap}, line ${len}, after a shrink`)
      }
    }
    expect(bad).toEqual([])
  })

  it("a chunk wakes the followers of its own child only", async () => {
    const out = new OutputStore({ perChildBytes: K, totalBytes: 64 * K })
    const [a, b] = [{}, {}]
    const [ca, cb] = [child(1), child(2)]
    out.attach(a, ca.child, 0)
    out.attach(b, cb.child, 0)
    const ac = new AbortController()
    let checks = 0 // how often the follower of a woke and found nothing for it
    const pages: string[] = []
    const following = (async () => {
      for await (const p of out.follow(a, { signal: ac.signal, done: () => (checks++, false) })) pages.push(p.data.toString())
    })()
    await new Promise((r) => setImmediate(r))
    const before = checks
    for (let i = 0; i < 200; i++) {
      cb.write('stdout', `b${i}`)
      await Promise.resolve()
    }
    await new Promise((r) => setImmediate(r))
    // Before: every chunk of any child woke every follower (200 checks here).
    expect(checks - before).toBe(0)
    ca.write('stdout', 'for a')
    await new Promise((r) => setImmediate(r))
    expect(pages).toEqual(['for a'])
    ac.abort()
    await following
  })

  it('against a model: each child keeps exactly its newest bytes within its bound, any page reads them back, the charge is what is kept', () => {
    let seed = 1
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed % n)
    // Plain checks (an expect per byte read would take most of the test's time).
    let trial = 0
    let step = 0
    const check = (ok: boolean, what: string) => {
      if (!ok) throw new Error(`${what} (trial ${trial}, step ${step})`)
    }
    for (trial = 0; trial < 40; trial++) {
      const per = [0, 1, 7, 64, 100, 1000][rnd(6)]!
      const out = new OutputStore({ perChildBytes: per, totalBytes: OVERHEAD * (1 + rnd(4)) + rnd(3000) })
      const live: Array<{ owner: object; c: ReturnType<typeof child>; written: Record<'stdout' | 'stderr', Buffer[]> }> = []
      for (step = 0; step < 150; step++) {
        const op = rnd(10)
        if (op === 0 || live.length === 0) {
          const x = { owner: {}, c: child(step), written: { stdout: [], stderr: [] } }
          out.attach(x.owner, x.c.child, 0)
          live.push(x)
        } else if (op === 1) live[rnd(live.length)]!.c.end()
        else {
          const x = live[rnd(live.length)]!
          const s = rnd(2) ? 'stdout' : 'stderr'
          const b = Buffer.from(Array.from({ length: rnd(300) }, () => rnd(256)))
          if (x.c.write(s, b)) x.written[s].push(b)
        }
        let kept = 0
        let keptBytes = 0
        for (const x of live) {
          if (!out.read(x.owner)) continue
          kept += OVERHEAD
          let childBytes = 0
          for (const s of ['stdout', 'stderr'] as const) {
            const bytes = Buffer.concat(x.written[s])
            const page = out.read(x.owner, { stream: s, ...all })!
            check(page.total === bytes.length, 'total')
            check(page.data.equals(bytes.subarray(page.offset)), 'the newest bytes kept')
            childBytes += bytes.length - page.offset
            const offset = rnd(bytes.length + 2)
            const maxBytes = 1 + rnd(20)
            const from = Math.max(offset, page.offset)
            check(out.read(x.owner, { stream: s, offset, maxBytes })!.data.equals(bytes.subarray(from, Math.min(bytes.length, from + maxBytes))), 'a page')
          }
          check(childBytes <= per, "the child's bound")
          keptBytes += childBytes
        }
        // The charge covers what is kept; the rings stay within the bound (the overhead of running
        // children may pass it: they are running processes, which the supervisor bounds otherwise).
        check(out.usedBytes >= kept + keptBytes, `charged ${out.usedBytes} for ${kept + keptBytes} kept`)
        check(out.usedBytes - kept <= out.totalBytes, `rings ${out.usedBytes - kept}, bound ${out.totalBytes}`)
      }
    }
  })
})
