// The Supervisor that require('reapkit') and import hand out is a shell class in dist/cjs/index.js
// (scripts/build-parts.mjs, classShell) whose methods call the part's (dist/cjs/parts/
// policies-supervisor.js). The supervisor tests run lib/'s class itself; this file runs the shell,
// from dist: its prototype against the part's, key by key; its generator methods side by side with
// the part's own, step by step; and one short run of a supervisor's methods on real children.
import { getEventListeners } from 'node:events'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { types } from 'node:util'
import { afterEach, describe, expect, it } from 'vitest'
// @ts-expect-error: a plain .mjs script of the project's, no types
import { classShell } from '../scripts/build-parts.mjs'
import { DIST, spawnGroup, trackGroup, waitFor } from './helpers'

type Rk = typeof import('../lib/index')
type Sup = InstanceType<Rk['Supervisor']>
const req = createRequire(__filename)
const rk = req(DIST) as Rk
/**
 * The part's class, the one the shell constructs: read from require's cache once the shell loaded
 * it (each copy of index.js loads parts of its own, lib/ground/load-part.ts: a part required here
 * first would be another copy of it).
 */
const Real = (() => {
  new rk.Supervisor({ backstop: false }).dispose()
  return (req(join(dirname(DIST), 'parts', 'policies-supervisor.js')) as { Supervisor: Rk['Supervisor'] }).Supervisor
})()

const kind = (f: unknown) =>
  typeof f === 'function'
    ? { tag: Object.prototype.toString.call(f), async: types.isAsyncFunction(f), generator: types.isGeneratorFunction(f), length: f.length, name: f.name }
    : { type: typeof f }

const made: Sup[] = []
/** A supervisor of the shell's (from dist), every child's group tracked, shut down after the test. */
function supervise(): Sup {
  const sup = new rk.Supervisor({ graceMs: 2000, closeTimeoutMs: 300, backstop: false })
  sup.on('spawn', (_record: unknown, child: { pid?: number }) => trackGroup(child.pid!))
  made.push(sup)
  return sup
}
afterEach(async () => {
  for (const sup of made.splice(0)) {
    await sup.shutdownAll()
    sup.dispose()
  }
})

/** How a step of an iterator ended: its result, or its error's shape. */
const settle = (p: Promise<IteratorResult<unknown>>): Promise<unknown[]> =>
  p.then(
    (r) => ['ok', r.done, (r.value as { status?: string } | undefined)?.status ?? r.value],
    (e: Error & { code?: string }) => ['err', e.name, e.code ?? null, e.message],
  )

describe('the Supervisor shell in dist/cjs/index.js', () => {
  it('has each method of the part\'s class: same names, lengths and kinds (async, async generator), the same base class', () => {
    const sup = supervise()
    expect(Real.prototype.list.call(sup)).toEqual([]) // (Real is the class that built it: its private fields are there)
    const shell = rk.Supervisor.prototype as unknown as Record<string | symbol, unknown>
    const real = Real.prototype as unknown as Record<string | symbol, unknown>
    const keys = Reflect.ownKeys(real)
    expect(keys.length).toBeGreaterThan(10)
    expect(Reflect.ownKeys(shell).sort()).toEqual([...keys].sort())
    for (const key of keys.filter((k) => k !== 'constructor')) {
      expect(typeof Object.getOwnPropertyDescriptor(shell, key)?.value, String(key)).toBe('function')
      expect(kind(shell[key]), String(key)).toEqual(kind(real[key]))
    }
    // The part's class has each kind the shell must copy (a check that the check can fail).
    expect(keys.map((k) => kind(real[k])).filter((k) => 'tag' in k && k.tag !== '[object Function]').map((k) => ('tag' in k ? k.tag : '')).sort())
      .toEqual(expect.arrayContaining(['[object AsyncFunction]', '[object AsyncGeneratorFunction]']))
    expect(rk.Supervisor.length).toBe(Real.length)
    expect(Object.getPrototypeOf(rk.Supervisor)).toBe(Object.getPrototypeOf(Real))
  })

  it('changes(): next, return and throw on the shell\'s iterator end as on the part\'s, started or not', async () => {
    const script = async (make: (sup: Sup, ...a: unknown[]) => AsyncGenerator<unknown>) => {
      const sup = supervise()
      const trace: unknown[] = []
      const listeners = () => sup.listenerCount('status')
      const base = listeners()
      let it = make(sup)
      trace.push(await settle(it.return('r')), await settle(it.next()))
      it = make(sup)
      trace.push(await settle(it.throw(new Error('thrown'))), await settle(it.next()))
      it = make(sup, { signal: 1 })
      trace.push(await settle(it.next()), await settle(it.next()))
      // Started: a status change given, then return(); the part's `finally` ran (no listener left).
      it = make(sup)
      let p = it.next()
      const first = sup.spawn('sleep', ['30'], { stdio: 'ignore' })
      trace.push(await settle(p), listeners() - base, await settle(it.return('r')), listeners() - base, await settle(it.next()))
      // Started, then throw().
      it = make(sup)
      p = it.next()
      const stopped = sup.terminate(first)
      trace.push(await settle(p), await settle(it.throw(new Error('thrown'))), listeners() - base, await settle(it.next()))
      await stopped
      // Steps queued before anything happened settle in order.
      it = make(sup)
      const order: string[] = []
      const queued = [it.next(), it.return('q'), it.next()].map((q, i) => settle(q).then((r) => (order.push(String(i)), r)))
      const second = sup.spawn('sleep', ['30'], { stdio: 'ignore' })
      trace.push(...(await Promise.all(queued)), order)
      await sup.terminate(second) // (dispose() below leaves its children running)
      // dispose() ends a pending one (after what was queued).
      it = make(sup)
      p = it.next()
      sup.dispose()
      const rest: unknown[] = [await settle(p)]
      for (let i = 0; i < 10 && (rest.at(-1) as unknown[])[1] === false; i++) rest.push(await settle(it.next()))
      trace.push(rest.at(-1), listeners() - base)
      return trace
    }
    const viaShell = await script((sup, ...a) => (sup.changes as (...a: unknown[]) => AsyncGenerator<unknown>)(...a))
    const viaPart = await script((sup, ...a) => (Real.prototype.changes as (...a: unknown[]) => AsyncGenerator<unknown>).apply(sup, a))
    expect(viaShell).toEqual(viaPart)
    expect(viaShell[0]).toEqual(['ok', true, 'r']) // (the trace holds what it should)
    expect((viaShell[4] as unknown[])[0]).toBe('err')
  })

  it('followOutput(): pages, return, throw and abort on the shell\'s iterator end as on the part\'s', async () => {
    const script = async (make: (sup: Sup, ...a: unknown[]) => AsyncGenerator<unknown>) => {
      const sup = supervise()
      const trace: unknown[] = []
      const page = (r: IteratorResult<unknown>) => {
        const v = r.value as { stream: string; data: Buffer } | undefined
        return [r.done, v?.stream, v?.data.toString()]
      }
      let it = make(sup, 'nobody')
      trace.push(await settle(it.next()), await settle(it.next()))
      sup.spawn('sh', ['-c', 'echo one; exec sleep 30'], { requestId: 'f', stdio: ['ignore', 'pipe', 'pipe'] })
      await waitFor(() => sup.output('f')?.data.toString() === 'one\n', 10_000, 'the child\'s output')
      for (const end of ['return', 'throw'] as const) {
        const ac = new AbortController()
        it = make(sup, 'f', { fromStart: true, signal: ac.signal })
        trace.push(page(await it.next()), getEventListeners(ac.signal, 'abort').length)
        trace.push(await settle(end === 'return' ? it.return('r') : it.throw(new Error('thrown'))))
        trace.push(getEventListeners(ac.signal, 'abort').length, await settle(it.next()))
      }
      const ac = new AbortController()
      it = make(sup, 'f', { signal: ac.signal })
      const p = it.next()
      ac.abort()
      trace.push(await settle(p))
      await sup.terminate('f')
      return trace
    }
    const viaShell = await script((sup, ...a) => (sup.followOutput as (...a: unknown[]) => AsyncGenerator<unknown>)(...a))
    const viaPart = await script((sup, ...a) => (Real.prototype.followOutput as (...a: unknown[]) => AsyncGenerator<unknown>).apply(sup, a))
    expect(viaShell).toEqual(viaPart)
    expect(viaShell[0]).toEqual(['err', 'ReapkitError', 'ERR_REAPKIT_NOT_SUPERVISED', 'No process "nobody" in this supervisor'])
    expect(viaShell[2]).toEqual([false, 'stdout', 'one\n'])
  })

  it('runs a supervisor: start, adopt, get, output, followOutput, restart, metrics, terminate, changes, killAllSync, dispose', async () => {
    const sup = supervise()
    const statuses: string[] = []
    const watching = (async () => {
      for await (const r of sup.changes()) statuses.push(`${(r as { requestId: string }).requestId}:${(r as { status: string }).status}`)
    })()
    const started = await sup.start('sh', ['-c', 'echo hello; exec sleep 30'], { requestId: 'a', stdio: ['ignore', 'pipe', 'pipe'] })
    expect(started.status).toBe('running')
    const other = spawnGroup('sleep', ['30'], { stdio: 'ignore' })
    expect(sup.adopt(other, { requestId: 'b' }).pid).toBe(other.pid)
    expect(sup.get('b')?.pid).toBe(other.pid)
    expect(sup.get(other)?.requestId).toBe('b')
    await waitFor(() => sup.output('a')?.data.toString() === 'hello\n', 10_000, 'a\'s output')
    const follow = sup.followOutput('a', { fromStart: true })
    expect(((await follow.next()).value as { data: Buffer }).data.toString()).toBe('hello\n')
    expect((await follow.return(undefined)).done).toBe(true)
    const restarted = await sup.restart('a', { graceMs: 2000 })
    expect(restarted.stop.signalsSent.map((s) => s.signal)).toEqual(['SIGTERM'])
    expect(restarted.record.pid).not.toBe(started.pid)
    expect(sup.metrics()).toMatchObject({ starts: 3, requestedRestarts: 1 }) // a, b (adopted), a again
    const stopped = await sup.terminate('b')
    expect(stopped.survivors).toEqual([])
    sup.killAllSync()
    await waitFor(() => sup.get('a')?.signal === 'SIGKILL', 10_000, 'a to end by SIGKILL')
    expect(sup.get('a')?.status).toBe('exited')
    sup.dispose()
    await watching // changes() ends with dispose()
    expect(statuses).toEqual(expect.arrayContaining(['a:running', 'b:terminated', 'a:exited']))
    expect(sup.list().map((r) => r.requestId).sort()).toEqual(['a', 'b'])
  })
})

describe('classShell (scripts/build-parts.mjs)', () => {
  const shellOf = (cls: unknown) => {
    const code = (classShell({ name: 'X', local: 'X' }, cls, 'part') as string[]).join('\n').replace(/^export /m, '')
    return new Function('part', `${code}\nreturn X`)({ X: cls }) as new () => Record<string, (...a: unknown[]) => unknown>
  }

  it('makes each method of its original\'s kind, sync generators included, and they call through', async () => {
    class Orig {
      plain(a: number) { return a + 1 }
      async later(a: number, b: number) { return a + b }
      *each(n: number) { for (let i = 0; i < n; i++) yield i }
      async *eachLater(n: number) { for (let i = 0; i < n; i++) yield i }
    }
    const X = shellOf(Orig)
    for (const k of ['plain', 'later', 'each', 'eachLater']) expect(kind(X.prototype[k]), k).toEqual(kind((Orig.prototype as unknown as Record<string, unknown>)[k]))
    const x = new X()
    expect(x.plain!(1)).toBe(2)
    expect(await x.later!(1, 2)).toBe(3)
    expect([...(x.each!(3) as Iterable<number>)]).toEqual([0, 1, 2])
    const got: unknown[] = []
    for await (const v of x.eachLater!(2) as AsyncIterable<number>) got.push(v)
    expect(got).toEqual([0, 1])
  })

  it('refuses, naming it, an accessor, a method named by a symbol, a static member', () => {
    expect(() => shellOf(class { get size() { return 1 } })).toThrow(/X\.prototype\[size\] is an accessor \(a getter or setter\): a shell cannot forward it/)
    expect(() => shellOf(class { set size(_v: number) {} })).toThrow(/is an accessor \(a getter or setter\)/)
    expect(() => shellOf(class { [Symbol.iterator]() { return [][Symbol.iterator]() } })).toThrow(/is named by a symbol/)
    expect(() => shellOf(class { static make() { return 1 } })).toThrow(/has static members \(make\)/)
  })
})
