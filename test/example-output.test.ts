// The process server's output history (examples/process-server/output.mjs): its byte budgets, on
// its own (no process needed: it is bookkeeping over the bytes it is given).
import { describe, expect, it } from 'vitest'
// @ts-expect-error: an example module in plain JavaScript, without types
import { createOutputHistory } from '../examples/process-server/output.mjs'

type History = { write(stream: string, chunk: string): void; end(code: number | null, signal: string | null): void }
const text = (n: number, c: string) => c.repeat(n)

describe('examples/process-server output history', () => {
  it('keeps the newest bytes of each stream up to the per-process budget, and tells what it skipped', () => {
    const out = createOutputHistory({ perProcessBytes: 8, totalBytes: 100 })
    const h: History = out.start({ owner: null, pid: 10, requestId: 1 })
    h.write('stdout', 'abcdef')
    h.write('stdout', 'ghijkl')
    h.write('stderr', 'x')
    const e = out.find(null, { pid: 10 })
    expect(out.read(e, { stream: 'stdout', offset: 0, maxBytes: 100 })).toMatchObject({ offset: 4, skipped: 4, data: 'efghijkl', nextOffset: 12, total: 12, running: true })
    expect(out.read(e, { stream: 'stdout', offset: 10, maxBytes: 1 })).toMatchObject({ offset: 10, skipped: 0, data: 'k', nextOffset: 11 })
    expect(out.read(e, { stream: 'stderr', offset: 0, maxBytes: 100 })).toMatchObject({ data: 'x' })
    expect(out.usedBytes).toBe(9)
  })

  it('the total budget drops ended histories first, oldest first; with none ended, the writer gives up its own oldest bytes', () => {
    const out = createOutputHistory({ perProcessBytes: 10, totalBytes: 25 })
    const a: History = out.start({ owner: 's', pid: 1, requestId: 'a' })
    const b: History = out.start({ owner: 's', pid: 2, requestId: 'b' })
    a.write('stdout', text(10, 'a'))
    b.write('stdout', text(10, 'b'))
    a.end(0, null)
    const c: History = out.start({ owner: 's', pid: 3, requestId: 'c' })
    c.write('stdout', text(10, 'c')) // 30 > 25: the ended 'a' goes
    expect(out.find('s', { requestId: 'a' })).toBeUndefined()
    expect(out.usedBytes).toBe(20)
    const d: History = out.start({ owner: 's', pid: 4, requestId: 'd' })
    d.write('stdout', text(10, 'd')) // 30 > 25, nothing ended: d keeps only its newest 5
    expect(out.usedBytes).toBe(25)
    expect(out.read(out.find('s', { pid: 4 }), { stream: 'stdout', offset: 0, maxBytes: 100 })).toMatchObject({ skipped: 5, data: 'ddddd', total: 10 })
    expect(out.find('other', { pid: 4 })).toBeUndefined() // another owner's: not found
    out.forget('s')
    expect(out.usedBytes).toBe(0)
    expect(out.find('s', { pid: 2 })).toBeUndefined()
  })
})
