// Exit delivery at scale: reapkit's exit watcher against a C pidfd + epoll floor, in the same run.
// The watched processes are tiny static C programs (pause()), forked en masse by the same C file:
// thousands of forked Node or sh processes stall on small VMs (FACTS.md, "Scale").
//   node bench/exitscale.mjs [exits|shutdown]   prints the rows alone (BENCH_QUICK=1: N = 1k / 200)
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const hr = () => process.hrtime.bigint()
const ms = (a, b) => Number(b - a) / 1e6
const sleep = (t) => new Promise((r) => setTimeout(r, t))
function pct(values, p) {
  const s = [...values].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]
}

/** Compiles the C floor (and the pause program) into a temporary folder. */
export function buildFloor() {
  const dir = mkdtempSync(join(os.tmpdir(), 'reapkit-exitscale-'))
  const bin = join(dir, 'exit-floor')
  const src = join(here, 'fixtures', 'exit-floor.c')
  try {
    execFileSync('cc', ['-O2', '-static', '-o', bin, src], { stdio: 'pipe' })
  } catch {
    execFileSync('cc', ['-O2', '-o', bin, src], { stdio: 'inherit' }) // no static libc here
  }
  return { bin, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

/** N pause processes in one new group; `done()` ends whatever is left of them. */
async function spawnSet(bin, n) {
  const child = spawn(bin, ['spawn', String(n)], { stdio: ['pipe', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.setEncoding('utf8')
  await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d
      if (out.includes('\n')) resolve()
    })
    child.once('exit', () => reject(new Error('exit-floor spawn ended early')))
  })
  const nums = out.trim().split(/\s+/).map(Number)
  const pgid = -nums.pop()
  child.stdin.on('error', () => {})
  const done = () => {
    try { process.kill(-pgid, 'SIGKILL') } catch {}
    child.stdin.end()
  }
  return { pids: nums, pgid, done, spawner: child }
}

function runFloor(bin, args, pids) {
  return new Promise((resolve, reject) => {
    const c = spawn(bin, args, { stdio: ['pipe', 'pipe', 'inherit'] })
    let out = ''
    c.stdout.setEncoding('utf8')
    c.stdout.on('data', (d) => (out += d))
    c.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit-floor ${args[0]} exited ${code}`))))
    c.stdin.end(pids.join('\n') + '\n\n')
  })
}

/** The main thread's own time on a CPU so far, ms (Linux schedstat, ns resolution); null elsewhere. */
function mainThreadRunMs() {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6
  } catch {
    return null
  }
}

/**
 * The longest gap between ticks of a 1 ms interval: how long the event loop was held. A gap is
 * either the main thread at work (our own block) or the thread waiting for a core while the machine
 * tears down N processes: `maxOwnMs` is the most on-CPU time the main thread spent inside any one
 * gap, i.e. the longest stretch of work that held the loop.
 */
function lagProbe() {
  let last = performance.now()
  let lastRun = mainThreadRunMs()
  let max = 0
  let maxOwn = 0
  const timer = setInterval(() => {
    const now = performance.now()
    const run = mainThreadRunMs()
    max = Math.max(max, now - last)
    if (run !== null && lastRun !== null) maxOwn = Math.max(maxOwn, run - lastRun)
    last = now
    lastRun = run
  }, 1)
  return { stop: () => (clearInterval(timer), { max, maxOwn }) }
}

const fdCount = () => readdirSync('/proc/self/fd').length

/** One round of "N exit at once": the C floor, reapkit, and nothing watched, each on a fresh set. */
async function allAtOnce(bin, n, sets, reapkit) {
  let set = await spawnSet(bin, n)
  sets.add(set)
  const [floorRegUs, floorMs, floorSeen] = (await runFloor(bin, ['all'], set.pids)).trim().split(' ').map(Number)
  set.done()
  sets.delete(set)
  await sleep(200)
  set = await spawnSet(bin, n)
  sets.add(set)
  const fdsBefore = fdCount()
  const t0 = hr()
  const promises = set.pids.map((pid) => reapkit.watchExit(pid))
  const regUs = (ms(t0, hr()) * 1e3) / n
  const fdsPerWatch = (fdCount() - fdsBefore) / n
  const probe = lagProbe()
  await sleep(20)
  const t1 = hr()
  set.spawner.stdin.write('k')
  await Promise.all(promises)
  const settledMs = ms(t1, hr())
  const { max: maxBlockMs, maxOwn: ownBlockMs } = probe.stop()
  set.done()
  sets.delete(set)
  await sleep(200)
  // The same kill with nothing watched: how long this machine holds the loop by itself while N
  // processes die (their exits compete for the same cores); reapkit's share is the difference.
  set = await spawnSet(bin, n)
  sets.add(set)
  const idle = lagProbe()
  await sleep(20)
  set.spawner.stdin.write('k')
  await sleep(Math.max(settledMs, floorMs) + 50)
  const baseBlockMs = idle.stop().max
  set.done()
  sets.delete(set)
  await sleep(200)
  return { settledMs, floorMs, floorSeen, maxBlockMs, ownBlockMs, baseBlockMs, regUs, floorRegUs, fdsPerWatch }
}

export async function run(reapkit, { quick = process.env.BENCH_QUICK === '1' } = {}) {
  const { bin, cleanup } = buildFloor()
  const sizes = quick ? [1000] : [1000, 3000, 10000]
  const all = []
  const sets = new Set()
  try {
    const rounds = quick ? 1 : 3
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
    for (const n of sizes) {
      const samples = []
      for (let round = 0; round < rounds; round++) samples.push(await allAtOnce(bin, n, sets, reapkit))
      const pick = (k) => median(samples.map((x) => x[k]))
      all.push({
        n, rounds,
        settledMs: pick('settledMs'), floorMs: pick('floorMs'), maxBlockMs: pick('maxBlockMs'), ownBlockMs: pick('ownBlockMs'), baseBlockMs: pick('baseBlockMs'),
        regUs: pick('regUs'), floorRegUs: pick('floorRegUs'), fdsPerWatch: pick('fdsPerWatch'),
        ratios: samples.map((x) => x.settledMs / x.floorMs), samples,
      })
    }

    // One exit among N watches: latency of each, R times.
    const n = quick ? 1000 : 10000
    const r = quick ? 30 : 200
    let set = await spawnSet(bin, n)
    sets.add(set)
    const floorOne = (await runFloor(bin, ['one', String(r)], set.pids)).trim().split('\n').map(Number)
    set.done()
    sets.delete(set)
    await sleep(200)
    set = await spawnSet(bin, n)
    sets.add(set)
    const promises = set.pids.map((pid) => reapkit.watchExit(pid))
    const one = []
    for (let j = 0; j < r; j++) {
      const t = hr()
      process.kill(set.pids[j], 'SIGKILL')
      await promises[j]
      one.push(ms(t, hr()))
    }
    set.done()
    sets.delete(set)
    await Promise.allSettled(promises)
    return { all, one: { n, r, reapkit: one, floor: floorOne } }
  } finally {
    for (const s of sets) s.done()
    cleanup()
  }
}

/**
 * Supervisor.shutdownAll of N children that ignore stdin end and SIGTERM (close 250 + grace 500),
 * beside a hand-rolled Promise.all of closeClient over the same kind of children, same options.
 */
export async function shutdownWedged(reapkit, counts) {
  const { bin, cleanup } = buildFloor()
  const rows = []
  try {
    for (const n of counts) {
      const row = { n }
      for (const how of ['supervisor', 'handRolled']) {
        const sup = new reapkit.Supervisor({ closeTimeoutMs: 250, graceMs: 500, backstop: false })
        const kids = []
        try {
          for (let i = 0; i < n; i++) kids.push(sup.spawn(bin, ['wedged'], { stdio: ['pipe', 'ignore', 'ignore'] }))
          await sleep(500)
          const c0 = process.cpuUsage()
          const t0 = hr()
          const reports = how === 'supervisor'
            ? await sup.shutdownAll()
            : await Promise.all(kids.map((k) => reapkit.closeClient(k, { closeTimeoutMs: 250, graceMs: 500 })))
          const cpu = process.cpuUsage(c0)
          row[how] = {
            ms: ms(t0, hr()),
            cpuMs: (cpu.user + cpu.system) / 1000,
            capped: reports.filter((r) => r.capped).length,
            alive: kids.filter((k) => k.exitCode === null && k.signalCode === null).length,
          }
        } finally {
          for (const k of kids) k.kill('SIGKILL')
          sup.dispose()
        }
        await sleep(300)
      }
      rows.push(row)
    }
  } finally {
    cleanup()
  }
  return rows
}

export function shutdownTable(rows) {
  return `| N wedged children | shutdownAll wall ms | CPU ms | capped | hand-rolled Promise.all(closeClient) wall ms | CPU ms | CPU ratio (target ≤ 1.5x) | wall vs close + grace + 1 s (1750 ms) |
|---:|---:|---:|---:|---:|---:|---:|---:|
${rows.map((r) => `| ${r.n} | ${fmt(r.supervisor.ms)} | ${fmt(r.supervisor.cpuMs)} | ${r.supervisor.capped} | ${fmt(r.handRolled.ms)} | ${fmt(r.handRolled.cpuMs)} | ${(r.supervisor.cpuMs / r.handRolled.cpuMs).toFixed(2)}x | ${(r.supervisor.ms / 1750).toFixed(2)}x: ${r.supervisor.ms <= 1750 ? 'within' : 'over'} |`).join('\n')}

One run per cell. Both sides run the same stop per child; the Supervisor's own bookkeeping is O(1) per
status change, and its cap grows by 1 ms per process (2,000 → close + grace + 3 s). Its closes also share
one timer for their deadlines (lib/mechanisms/stop/deadlines.ts: deadlines within 50 µs per child, at most
250 ms, of each other end together), so its SIGKILLs go out in one loop turn; the hand-rolled closes each
keep their own, and their kills trickle out: libuv waitpid()s every child it has once per SIGCHLD, so
exits spread over time cost a pass over all the children still running for each.`
}

const fmt = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(3))

export function table(res) {
  const { all, one } = res
  const p50 = pct(one.reapkit, 50)
  const f50 = pct(one.floor, 50)
  return `| N watched, all SIGKILLed at once | every promise settled, ms | C pidfd + epoll, ms | ratio (target ≤ 1.5x) | longest event-loop gap, ms: watching / nothing watched | longest work in one gap, ms (target ≤ 50) | register one watch, µs (C) | descriptors per watch |
|---:|---:|---:|---:|---:|---:|---:|---:|
${all.map((r) => `| ${r.n} | ${fmt(r.settledMs)} | ${fmt(r.floorMs)} | ${(r.settledMs / r.floorMs).toFixed(2)}x | ${fmt(r.maxBlockMs)} / ${fmt(r.baseBlockMs)} | ${fmt(r.ownBlockMs)} | ${fmt(r.regUs)} (${fmt(r.floorRegUs)}) | ${r.fdsPerWatch.toFixed(2)} |`).join('\n')}

Each cell is the median of ${all[0]?.rounds ?? 1} rounds (the N processes are forked afresh for each side of each round); the
per-round ratios are in the JSON.
The event-loop gap is the longest gap of a 1 ms interval timer while the N exits are delivered; the
"nothing watched" figure is the same kill with no watch at all. On 2 cores, N processes dying at
once keep the kernel busy, and a gap is mostly the main thread waiting for a core, not working: the
"longest work in one gap" column is the main thread's own on-CPU time (schedstat) inside its busiest
gap, the longest stretch of reapkit's work that held the loop (target ≤ 50 ms).

One exit among ${one.n} watches, ${one.r} runs each: reapkit p50 ${fmt(p50)} ms, p90 ${fmt(pct(one.reapkit, 90))} ms; C floor p50 ${fmt(f50)} ms, p90 ${fmt(pct(one.floor, 90))} ms; p50 ratio ${(p50 / f50).toFixed(2)}x (target ≤ 2x).`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { createRequire } = await import('node:module')
  const reapkit = createRequire(import.meta.url)(process.env.REAPKIT_DIST ?? join(here, '..', 'dist', 'cjs', 'index.js'))
  const quick = process.env.BENCH_QUICK === '1'
  if (process.argv[2] !== 'shutdown') {
    const res = await run(reapkit)
    console.log(table(res))
  }
  const counts = process.argv[3] ? process.argv.slice(3).map(Number) : quick ? [200] : [500, 1000, 2000, 5000]
  const load0 = os.loadavg()[0]
  if (process.argv[2] !== 'exits') console.log('\n' + shutdownTable(await shutdownWedged(reapkit, counts)))
  console.log(`\n${os.cpus().length} cores; 1-minute load average ${load0.toFixed(1)} at the start, ${os.loadavg()[0].toFixed(1)} at the end.`)
  if (process.env.BENCH_JSON) console.log(JSON.stringify(res))
  process.exit(0)
}
