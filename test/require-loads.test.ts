// What require('reapkit') loads (issue 29 item 6): spawn(), watchExit() and what they stand on, in
// one file (dist/cjs/index.js); every other part of the library (the Supervisor, doctor, the
// containers, the keepalive, Prometheus, the Windows code) loads from dist/cjs/parts/ on first use,
// with the same exports, the same kinds of value and the same errors at the same moment as the
// library in one piece (lib/index.ts, which this file imports). Counts files and modules, not
// milliseconds: the time is the bench's (bench/require.mjs, beside the one-line-module floor).
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { types } from 'node:util'
import { describe, expect, it } from 'vitest'
import * as source from '../lib/index'
import { DIST } from './helpers'

/** Runs `body` in a fresh Node after `const rk = require(DIST)`; `report(x)` prints its answer. */
function fresh<T>(body: string): T {
  const script = `
    const before = new Set(process.moduleLoadList)
    const rk = require(${JSON.stringify(DIST)})
    const distDir = ${JSON.stringify(dirname(DIST))}
    const builtins = () => process.moduleLoadList.filter((m) => !before.has(m) && m.startsWith('NativeModule ')).map((m) => m.slice(13))
    const files = () => Object.keys(require.cache).filter((f) => f.startsWith(distDir)).map((f) => f.slice(distDir.length + 1)).sort()
    const report = (x) => console.log(JSON.stringify(x))
    ;(async () => { ${body} })().catch((err) => { console.error(err); process.exit(1) })`
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 })
  expect(r.status, r.stderr).toBe(0)
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as T
}

/** How a call with a bad argument ends: synchronously, or as a rejection; the error's shape. */
const outcomeScript = `
  async function outcome(fn) {
    let r
    try { r = fn(Symbol('bad')) } catch (e) { return ['throws', e.name, e.code ?? null, e.message] }
    if (!r || typeof r.then !== 'function') return ['returns', typeof r]
    try { await r; return ['resolves'] } catch (e) { return ['rejects', e.name, e.code ?? null, e.message] }
  }`

async function outcome(fn: (arg: unknown) => unknown): Promise<unknown[]> {
  let r: unknown
  try {
    r = fn(Symbol('bad'))
  } catch (e) {
    const err = e as Error & { code?: string }
    return ['throws', err.name, err.code ?? null, err.message]
  }
  if (!r || typeof (r as Promise<unknown>).then !== 'function') return ['returns', typeof r]
  try {
    await r
    return ['resolves']
  } catch (e) {
    const err = e as Error & { code?: string }
    return ['rejects', err.name, err.code ?? null, err.message]
  }
}

const isClass = (v: unknown): boolean => typeof v === 'function' && /^class\b/.test(Function.prototype.toString.call(v))

describe("require('reapkit')", () => {
  it('loads one file and holds Node\'s spawn; the Supervisor, doctor, containers, keepalive and Prometheus load on first use', () => {
    const r = fresh<{ files: string[]; builtins: string[] }>('report({ files: files(), builtins: builtins() })')
    expect(r.files).toEqual(['index.js'])
    // Taken at require so that `child_process.spawn = reapkit.spawn` cannot make spawn call itself.
    expect(r.builtins).toContain('child_process')
    // crypto: container run ids and the state file; perf_hooks: the keepalive; worker_threads: the
    // keepalive's and the containers' checks; tty: the foreground hand-over; http, readline: none.
    // os: signal and errno names, read on first use.
    for (const m of ['crypto', 'perf_hooks', 'worker_threads', 'tty', 'http', 'readline', 'os']) expect(r.builtins, m).not.toContain(m)
  })

  it('exports what lib/index.ts exports, each of the same kind, name and length', () => {
    const built = fresh<Record<string, { type: string; name?: string; length?: number; isClass?: boolean }>>(`
      const out = {}
      for (const n of Object.keys(rk)) {
        if (n === '__esModule') continue
        const v = rk[n]
        out[n] = typeof v === 'function' ? { type: 'function', name: v.name, length: v.length, isClass: /^class\\b/.test(Function.prototype.toString.call(v)) } : { type: typeof v }
      }
      report(out)`)
    const expected: Record<string, unknown> = {}
    for (const [n, v] of Object.entries(source)) {
      expected[n] = typeof v === 'function' ? { type: 'function', name: v.name, length: v.length, isClass: isClass(v) } : { type: typeof v }
    }
    expect(built).toEqual(expected)
  })

  it('exports each name as esbuild\'s CommonJS does: __esModule first, then enumerable, non-configurable getters (read-only)', () => {
    const r = fresh<{ keys: string[]; esModule: unknown; shapes: string[] }>(`
      const d = Object.getOwnPropertyDescriptors(rk)
      const keys = Reflect.ownKeys(rk).filter((k) => typeof k === 'string')
      const shapes = [...new Set(keys.slice(1).map((k) => [typeof d[k].get, typeof d[k].set, d[k].enumerable, d[k].configurable].join()))]
      report({ keys, esModule: d.__esModule, shapes })`)
    expect(r.keys[0]).toBe('__esModule')
    expect(r.esModule).toEqual({ value: true, writable: false, enumerable: false, configurable: false })
    expect(r.keys.slice(1).sort()).toEqual(Object.keys(source).sort())
    expect(r.shapes).toEqual(['function,undefined,true,false'])
  })

  it('every function fails a bad argument as lib/index.ts does, at the same moment (sync throw or rejection), lazily loaded ones too', async () => {
    // Each is called once with a Symbol, which every one refuses or ignores (no process is touched).
    const built = fresh<{ calls: Record<string, unknown[]>; before: string[]; after: string[] }>(`${outcomeScript}
      const partsLoaded = () => files().filter((f) => f.startsWith('parts/'))
      const before = partsLoaded()
      const calls = {}
      for (const n of Object.keys(rk).sort()) {
        if (typeof rk[n] === 'function' && !/^class\\b/.test(Function.prototype.toString.call(rk[n]))) calls[n] = await outcome(rk[n])
      }
      report({ calls, before, after: partsLoaded() })`)
    const expected: Record<string, unknown[]> = {}
    for (const [n, v] of Object.entries(source).sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (typeof v === 'function' && !isClass(v)) expected[n] = await outcome(v as (a: unknown) => unknown)
    }
    expect(built.calls).toEqual(expected)
    expect(built.before).toEqual([])
    for (const part of ['mechanisms-kill', 'policies-close', 'policies-doctor', 'policies-keepalive', 'policies-supervisor-prometheus']) {
      expect(built.after, part).toContain(`parts/${part}.js`)
    }
  })

  it('Supervisor is a class at require whose part loads on first construction: instanceof, constructor, extends and its prototype hold', () => {
    const r = fresh<{ before: string[]; read: string[]; after: string[]; isClass: boolean; methods: boolean; checks: boolean[]; spied: number }>(`
      const partsLoaded = () => files().filter((f) => f.startsWith('parts/'))
      const before = partsLoaded()
      const { Supervisor } = rk
      const isClass = /^class\\b/.test(Function.prototype.toString.call(Supervisor))
      const methods = ['spawn', 'list', 'shutdownAll', 'changes'].every((m) => typeof Supervisor.prototype[m] === 'function')
      const read = partsLoaded()
      // A spy put on the prototype before any instance exists sees the part's own calls through it.
      let spied = 0
      const list = Supervisor.prototype.list
      Supervisor.prototype.list = function () { spied++; return list.apply(this, arguments) }
      const s = new Supervisor()
      class Mine extends rk.Supervisor { list() { return ['mine', ...super.list()] } }
      const m = new Mine()
      const checks = [s instanceof rk.Supervisor, s.constructor === rk.Supervisor, m instanceof Supervisor, m.constructor === Mine, Supervisor === rk.Supervisor,
        s instanceof require('node:events').EventEmitter, Object.getPrototypeOf(s) === Supervisor.prototype, m.list()[0] === 'mine', s.list().length === 0]
      await Promise.all([s.shutdownAll(), m.shutdownAll()])
      report({ before, read, after: partsLoaded(), isClass, methods, checks, spied })`)
    expect(r.before).toEqual([])
    expect(r.read).toEqual([]) // reading the class and its prototype loads nothing
    expect(r.isClass).toBe(true)
    expect(r.methods).toBe(true)
    expect(r.after).toContain('parts/policies-supervisor.js')
    expect(r.checks).toEqual([true, true, true, true, true, true, true, true, true])
    expect(r.spied).toBeGreaterThanOrEqual(2) // m.list() through super, s.list()
  })

  it('a part shares the eager bundle\'s modules: a child spawned by spawn() is known to killProcessGracefully (one spawn registry)', () => {
    const r = fresh<{ pid: number; pgid: number | null; sent: string[]; survivors: number[] }>(`
      const child = rk.spawn('sleep', ['30'], { stdio: 'ignore' })
      const result = await rk.killProcessGracefully(child, { graceMs: 5000 })
      report({ pid: child.pid, pgid: result.pgid, sent: result.signalsSent.map((s) => s.signal), survivors: result.survivors })`)
    // The part found the child's group and pin in spawn()'s registry: a copy of spawn.ts in the part
    // would know neither, and stop the pid alone (pgid null).
    expect(r.pgid).toBe(r.pid)
    expect(r.sent).toEqual(['SIGTERM'])
    expect(r.survivors).toEqual([])
  })
})

describe('spawn()\'s rare paths', () => {
  it('a plain spawn() loads no PID-namespace code; a pidNamespace refusal loads it and throws its TypeError, before any process starts', () => {
    const r = fresh<{ plain: string[]; refused: string; after: string[] }>(`
      const pidns = () => files().filter((f) => f === 'parts/pid-namespace.js')
      const child = rk.spawn('true', [], { stdio: 'ignore' })
      await new Promise((res) => child.once('exit', res))
      const plain = pidns()
      let refused = 'none'
      try { rk.spawn('true', [], { pidNamespace: true, parentDeathSignal: 'SIGTERM' }) } catch (err) { refused = err.name + ': ' + err.message }
      report({ plain, refused, after: pidns() })`)
    expect(r.plain).toEqual([])
    expect(r.refused).toMatch(/^TypeError: The "parentDeathSignal" option must be 'SIGKILL'/)
    expect(r.after).toEqual(['parts/pid-namespace.js'])
  })
})

describe('a part of another build', () => {
  it('is refused with an error that says so (the package replaced on disk while a process ran)', () => {
    const r = fresh<{ error: string }>(`
      rk[Symbol.for('reapkit.internals')].build = 'another build' // what a newer index.js would carry
      try { await rk.findOrphans(); report({ error: 'none' }) } catch (err) { report({ error: err.message }) }`)
    expect(r.error).toMatch(/parts\/ is not from the build of the dist\/cjs\/index\.js this process loaded/)
  })
})

describe('a part loaded when the process is out of descriptors', () => {
  it('loads anyway: the first killProcessGracefully, with none free, still stops its target', () => {
    const r = fresh<{ loaded: boolean; signalled: string[]; exited: boolean; error: string | null }>(`
      const fs = require('node:fs')
      const child = rk.spawn('sleep', ['30'], { stdio: 'ignore' })
      const held = []
      try { for (;;) held.push(fs.openSync('/dev/null', 'r')) } catch (err) { if (err.code !== 'EMFILE') throw err }
      let result = null, error = null
      try { result = await rk.killProcessGracefully(child, { graceMs: 300, confirmMs: 1000 }) } catch (err) { error = err.code || String(err) }
      held.forEach((fd) => fs.closeSync(fd))
      // Bounded: a stop that failed leaves the sleep running, killed here so the answer comes at once.
      const exited = await new Promise((res) => {
        if (child.exitCode !== null || child.signalCode !== null) return res(true)
        const t = setTimeout(() => { child.kill('SIGKILL'); res(false) }, 2000)
        child.once('exit', () => { clearTimeout(t); res(true) })
      })
      report({ loaded: files().includes('parts/mechanisms-kill.js'), signalled: result ? result.signalsSent.map((s) => s.signal) : [], exited, error })`)
    expect(r.error).toBeNull()
    expect(r.loaded).toBe(true)
    expect(r.signalled[0]).toBe('SIGTERM')
    expect(r.exited).toBe(true)
  })
})

describe('the addon', () => {
  it('loads on first use, not at require: capabilities() loads it, once', () => {
    const r = fresh<{ atRequire: string[]; after: string[]; native: boolean; again: boolean }>(`
      const addons = () => Object.keys(require.cache).filter((f) => f.endsWith('.node'))
      const atRequire = addons()
      const caps = rk.capabilities()
      rk.capabilities()
      report({ atRequire, after: addons(), native: caps.native, again: rk.capabilities().native })`)
    expect(r.atRequire).toEqual([])
    expect(r.after).toHaveLength(1)
    expect(r.native).toBe(true)
    expect(r.again).toBe(true)
  })

  it.runIf(process.platform === 'linux')('loads when its first use comes with no descriptor free: a stop of a process reapkit did not start finds its group', () => {
    // dlopen needs a descriptor; without the spare one (load-part.ts) the addon failed to load here,
    // for good: the stop signalled nothing and capabilities() said native: false.
    const r = fresh<{ pid: number; pgid: number | null; signalled: string[]; native: boolean; error: string | null; exited: boolean }>(`
      const fs = require('node:fs')
      const child = require('node:child_process').spawn('sleep', ['30'], { detached: true, stdio: 'ignore' })
      await new Promise((res, rej) => { child.once('spawn', res); child.once('error', rej) })
      const held = []
      try { for (;;) held.push(fs.openSync('/dev/null', 'r')) } catch (err) { if (err.code !== 'EMFILE') throw err }
      let result = null, error = null
      try { result = await rk.killProcessGracefully(child, { graceMs: 300, confirmMs: 1000 }) } catch (err) { error = err.code || String(err) }
      held.forEach((fd) => fs.closeSync(fd))
      const exited = await new Promise((res) => {
        if (child.exitCode !== null || child.signalCode !== null) return res(true)
        const t = setTimeout(() => { child.kill('SIGKILL'); res(false) }, 2000)
        child.once('exit', () => { clearTimeout(t); res(true) })
      })
      report({ pid: child.pid, pgid: result ? result.pgid : null, signalled: result ? result.signalsSent.map((s) => s.signal) : [], native: rk.capabilities().native, error, exited })`)
    expect(r.error).toBeNull()
    expect(r.native).toBe(true)
    expect(r.pgid).toBe(r.pid)
    expect(r.signalled[0]).toBe('SIGTERM')
    expect(r.exited).toBe(true)
  })
})

describe('reapkit loaded afresh many times in one process (a test runner that resets its registry)', () => {
  it('holds one spare descriptor and one exit listener in all, not one per copy', () => {
    const r = fresh<{ fds: [number, number]; exitListeners: [number, number] }>(`
      const path = require('node:path')
      const count = () => require('node:fs').readdirSync('/proc/self/fd').length
      const before = [count(), process.listenerCount('exit')]
      for (let i = 0; i < 20; i++) {
        for (const key of Object.keys(require.cache)) if (key.startsWith(distDir + path.sep) && !key.endsWith('.node')) delete require.cache[key]
        require(${JSON.stringify(DIST)})
      }
      report({ fds: [before[0], count()], exitListeners: [before[1], process.listenerCount('exit')] })`)
    expect(r.fds[1]).toBe(r.fds[0])
    expect(r.exitListeners[1]).toBe(r.exitListeners[0])
  })
})

/** Runs `body` in a fresh Node after `const esm = await import(the ESM entry)`, as fresh() does. */
function freshEsm<T>(body: string): T {
  const esm = pathToFileURL(join(dirname(DIST), '..', 'esm', 'index.mjs')).href
  const script = `
    const distDir = ${JSON.stringify(dirname(DIST))}
    const files = () => Object.keys(require.cache).filter((f) => f.startsWith(distDir)).map((f) => f.slice(distDir.length + 1)).sort()
    const report = (x) => console.log(JSON.stringify(x))
    ;(async () => { const esm = await import(${JSON.stringify(esm)}); ${body} })().catch((err) => { console.error(err); process.exit(1) })`
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 })
  expect(r.status, r.stderr).toBe(0)
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as T
}

describe('the ESM entry', () => {
  it('exports the same names', async () => {
    const esm = (await import(join(dirname(DIST), '..', 'esm', 'index.mjs'))) as Record<string, unknown>
    expect(Object.keys(esm).sort()).toEqual(Object.keys(source).sort())
  })

  it('loads what require does and no part: import of reapkit, and of reapkit/mcp and reapkit/testing, reads every export and loads index.js alone', () => {
    // A part loaded here (a getter among the exports, which the ESM entry reads all of) made
    // `import 'reapkit'` cost 46 ms against require's 5 (bench/require.mjs).
    const r = freshEsm<{ files: string[]; addon: boolean }>(`
      report({ files: files(), addon: Object.keys(require.cache).some((f) => f.endsWith('.node')) })`)
    expect(r.files).toEqual(['index.js'])
    expect(r.addon).toBe(false)
    for (const entry of ['mcp', 'testing']) {
      const sub = freshEsm<{ files: string[] }>(`
        await import(${JSON.stringify(pathToFileURL(join(dirname(DIST), '..', 'esm', `${entry}.mjs`)).href)})
        report({ files: files().filter((f) => f.startsWith('parts/')) })`)
      expect(sub.files, entry).toEqual([])
    }
  })

  it('hands out the objects require does, by named, namespace and dynamic import, and each works once touched', () => {
    const r = freshEsm<{ differ: string[]; count: number; before: string[]; supervisor: boolean[]; orphans: string; kill: string[]; caps: boolean }>(`
      const rk = require(distDir + '/index.js')
      const named = await import('data:text/javascript,export * from ' + JSON.stringify(${JSON.stringify(pathToFileURL(join(dirname(DIST), '..', 'esm', 'index.mjs')).href)}))
      const differ = Object.keys(rk).filter((n) => n !== '__esModule' && (esm[n] !== rk[n] || named[n] !== rk[n]))
      const before = files().filter((f) => f.startsWith('parts/'))
      const s = new esm.Supervisor()
      const supervisor = [s instanceof rk.Supervisor, s instanceof esm.Supervisor, Array.isArray(s.list())]
      await s.shutdownAll()
      const orphans = typeof (await esm.findOrphans()).trees
      const child = esm.spawn('sleep', ['30'], { stdio: 'ignore' })
      const kill = (await rk.killProcessGracefully(child, { graceMs: 5000 })).signalsSent.map((x) => x.signal)
      report({ differ, count: Object.keys(esm).length, before, supervisor, orphans, kill, caps: esm.capabilities().native })`)
    expect(r.differ).toEqual([])
    expect(r.count).toBe(Object.keys(source).length)
    expect(r.before).toEqual([])
    expect(r.supervisor).toEqual([true, true, true])
    expect(r.orphans).toBe('object')
    expect(r.kill).toEqual(['SIGTERM'])
    expect(r.caps).toBe(true)
  })
})

describe('a copy of reapkit loaded before the require cache was cleared (jest.resetModules, decache)', () => {
  it('loads its parts bound to itself: the Supervisor and killProcessGracefully know the children it spawned', () => {
    const r = fresh<{ first: boolean; second: boolean; otherKnows: boolean; pgid: number | null; pid: number }>(`
      const path = require('node:path')
      const clear = () => { for (const key of Object.keys(require.cache)) if (key.startsWith(distDir + path.sep) && !key.endsWith('.node')) delete require.cache[key] }
      const supervisedIsKnown = async (lib, by) => {
        const s = new lib.Supervisor()
        const child = s.spawn('sleep', ['30'], { stdio: 'ignore' })
        const known = by.spawnedInfo(child) !== undefined
        await s.shutdownAll()
        return known
      }
      clear()
      const first = await supervisedIsKnown(rk, rk)
      // Another copy, loaded now, whose parts load first: this copy's own must still be bound to it.
      clear()
      const other = require(${JSON.stringify(DIST)})
      const otherKnows = await supervisedIsKnown(other, other)
      await other.killProcessGracefully(other.spawn('sleep', ['30'], { stdio: 'ignore' }), { graceMs: 5000 })
      clear()
      const child = rk.spawn('sleep', ['30'], { stdio: 'ignore' })
      const result = await rk.killProcessGracefully(child, { graceMs: 5000 })
      report({ first, second: await supervisedIsKnown(rk, rk), otherKnows, pid: child.pid, pgid: result.pgid })`)
    // A part bound to another copy holds another spawn registry: the child would be unknown there.
    expect(r).toEqual({ first: true, second: true, otherKnows: true, pid: r.pid, pgid: r.pid })
  })
})

describe('the stubs of lazily loaded functions', () => {
  it('are async where lib/index.ts\'s are, and constructible only where those are', () => {
    const r = fresh<Record<string, [boolean, boolean]>>(`
      const { types } = require('node:util')
      const constructible = (f) => { try { Reflect.construct(String, [], f); return true } catch { return false } }
      const out = {}
      for (const name of Object.keys(rk)) if (typeof rk[name] === 'function' && !/^class\\b/.test(Function.prototype.toString.call(rk[name]))) out[name] = [types.isAsyncFunction(rk[name]), constructible(rk[name])]
      report(out)`)
    const constructible = (f: unknown): boolean => {
      try {
        Reflect.construct(String, [], f as new () => unknown)
        return true
      } catch {
        return false
      }
    }
    const expected: Record<string, [boolean, boolean]> = {}
    for (const [name, value] of Object.entries(source)) if (typeof value === 'function' && !isClass(value)) expected[name] = [types.isAsyncFunction(value), constructible(value)]
    expect(Object.values(expected).some(([isAsync]) => isAsync)).toBe(true)
    expect(r).toEqual(expected)
  })

  it('an async function whose part fails to load rejects rather than throws; `new` on it throws TypeError', () => {
    const r = fresh<{ findOrphans: string; closeClient: string; newStub: string }>(`
      rk[Symbol.for('reapkit.internals')].build = 'another build'
      const how = (f) => { try { const p = f(); p.catch(() => {}); return typeof p?.then === 'function' ? 'promise' : 'returns' } catch (err) { return 'throws ' + err.name } }
      let newStub = 'no error'
      try { new rk.killProcessGracefully(1) } catch (err) { newStub = err.name }
      report({ findOrphans: how(() => rk.findOrphans()), closeClient: how(() => rk.closeClient({})), newStub })`)
    expect(r).toEqual({ findOrphans: 'promise', closeClient: 'promise', newStub: 'TypeError' })
  })
})

describe('the source maps', () => {
  it('name no folder of the machine that built them (the generated imports are relative)', () => {
    const cjs = dirname(DIST)
    const root = join(cjs, '..', '..')
    const maps = ['index.js.map', ...readdirSync(join(cjs, 'parts')).filter((f) => f.endsWith('.map')).map((f) => join('parts', f))]
    const absolute = maps.filter((f) => readFileSync(join(cjs, f), 'utf8').includes(root))
    expect(maps.length).toBeGreaterThan(1)
    expect(absolute).toEqual([])
  })
})

describe('the stops after the package was replaced on disk (an in-place upgrade)', () => {
  it('work in a process that spawned before: the first spawn() loads the stop parts right after it', () => {
    const r = fresh<{ before: string[]; after: string[]; kill: string[]; close: string; error: string | null }>(`
      const stops = ['parts/mechanisms-kill.js', 'parts/policies-close.js']
      const child = rk.spawn('sleep', ['30'], { stdio: 'ignore' })
      const server = rk.spawn('cat', [], { stdio: ['pipe', 'pipe', 'ignore'] })
      const before = files().filter((f) => stops.includes(f))
      await new Promise((res) => setImmediate(res)) // queued after the one spawn() queued: runs after it
      const after = files().filter((f) => stops.includes(f))
      rk[Symbol.for('reapkit.internals')].build = 'another build' // a part loaded from now on is refused
      let kill = [], close = 'none', error = null
      try {
        kill = (await rk.killProcessGracefully(child, { graceMs: 5000 })).signalsSent.map((s) => s.signal)
        close = (await rk.closeClient(server, { closeTimeoutMs: 5000 })).phase
      } catch (err) { error = err.message; child.kill('SIGKILL'); server.kill('SIGKILL') }
      report({ before, after, kill, close, error })`)
    expect(r.error).toBeNull()
    expect(r.before).toEqual([]) // not in spawn() itself: its cost stays what it was
    expect(r.after).toEqual(['parts/mechanisms-kill.js', 'parts/policies-close.js'])
    expect(r.kill).toEqual(['SIGTERM'])
    expect(r.close).toBe('graceful')
  })
})
