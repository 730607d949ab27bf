// Keepalive figures (issue 4), side by side. Called by run.mjs.
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const DIST = join(here, '..', 'dist', 'cjs', 'index.js')
const require = createRequire(import.meta.url)
const reapkit = require(DIST)
const hr = () => process.hrtime.bigint()
const ms = (a, b) => Number(b - a) / 1e6
const sleep = (t) => new Promise((r) => setTimeout(r, t))

/** Per-request cost of run() and begin()/done(), against the same calls untracked. */
export async function trackingOverhead(n) {
  const k = reapkit.createKeepalive({ exit: false, signals: false, stdin: false, parentDeath: false, finalLine: false })
  const work = () => 1
  const time = async (fn) => {
    for (let i = 0; i < 2000; i++) await fn() // warm up
    const t0 = hr()
    for (let i = 0; i < n; i++) await fn()
    return Number(hr() - t0) / n // ns per call
  }
  const untracked = await time(async () => work())
  const run = await time(() => k.run(work))
  const syncBare = await time(() => work())
  const begin = await time(() => {
    const done = k.begin()
    const r = work()
    done()
    return r
  })
  k.dispose()
  return { untracked, run, syncBare, begin }
}

function startChain(method, viaIntermediate) {
  const script = join(here, 'fixtures', 'idle-server.cjs')
  const child = spawn(process.execPath, [script, viaIntermediate ? 'intermediate' : 'server', method], {
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true,
    env: { ...process.env, REAPKIT_DIST: DIST },
  })
  const ready = new Promise((resolve, reject) => {
    let buf = ''
    child.stdout.on('data', (d) => {
      buf += d
      const line = buf.split('\n').find((l) => l.includes('ready'))
      if (line) resolve(JSON.parse(line).pid)
    })
    setTimeout(() => reject(new Error('bench: server did not start')), 15_000)
  })
  return { child, ready }
}

function sweep(child) {
  try {
    process.kill(-child.pid, 'SIGKILL')
  } catch {}
}

/** SIGTERM -> exit of an idle keepalive server. */
export async function sigtermToExit(samples) {
  const out = []
  for (let i = 0; i < samples; i++) {
    const { child, ready } = startChain('reapkit', false)
    const pid = await ready
    const exited = reapkit.watchExit(pid).then(() => hr())
    await sleep(20)
    const t0 = hr()
    child.kill('SIGTERM')
    out.push(ms(t0, await exited))
    sweep(child)
  }
  return out
}

/** Parent SIGKILLed -> idle server exited: keepalive (kernel events) vs a 2 s getppid poll. */
export async function parentDeathToExit(samples) {
  const run = async (method, parallel) => {
    const chains = []
    for (let i = 0; i < samples; i++) chains.push(startChain(method, true))
    const pids = await Promise.all(chains.map((c) => c.ready))
    const results = []
    const one = async (c, pid) => {
      const exited = reapkit.watchExit(pid).then(() => hr())
      await sleep(parallel ? Math.random() * 2000 : 20)
      const t0 = hr()
      c.child.kill('SIGKILL')
      results.push(ms(t0, await exited))
      sweep(c.child)
    }
    if (parallel) await Promise.all(chains.map((c, i) => one(c, pids[i])))
    else for (let i = 0; i < chains.length; i++) await one(chains[i], pids[i])
    return results
  }
  return { reapkit: await run('reapkit', false), poll2000: await run('poll2000', true) }
}
