// Restart figures for the Supervisor's restart policies (issue 20), each beside what a host writes
// by hand, in the same run:
// 1. Restart latency: one incarnation's exit -> the next one's first instruction. The child
//    (bench/fixtures/stamp.c) stamps CLOCK_MONOTONIC as its first instruction and again as its last
//    before _exit(1), so the figure is the children's own clock, not when the host's loop looked.
//    Supervisor `restart: 'on-failure'` with no backoff, beside `child.on('exit', () => spawn(...))`
//    with child_process.spawn and with reapkit's spawn; interleaved in chunks.
// 2. What events and metrics cost per start/stop (spawn `sleep`, terminate it): a Supervisor with a
//    listener on every event and metrics() read after each cycle, beside one without either;
//    interleaved cycle by cycle. Target: within 5%.
// 3. A crash-looping child (`false`) over one fixed window: the same work side by side (the
//    Supervisor with no backoff beside a hand-rolled immediate respawn: host CPU per start), and the
//    default backoff's effect beside no backoff (the policy's, in starts and CPU).
// Without a C compiler the latency (1) is left out ({ skipped }) and the rest still runs.
// Called by run.mjs (restartFigures, restartMarkdown); also runs alone, after npm run build:ts:
//   node bench/restart.mjs            (BENCH_QUICK=1 for the quick size)
import { spawn as nodeSpawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const reapkit = createRequire(import.meta.url)(process.env.REAPKIT_DIST ?? join(here, '..', 'dist', 'cjs', 'index.js')) // REAPKIT_DIST: another build, for a before/after
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const within = (promise, ms, what) => {
  let timer
  const expired = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`bench: timed out waiting for ${what}`)), ms)))
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer))
}
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]
}
const fmt = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v >= 1 ? v.toFixed(2) : v.toFixed(3))

/**
 * Compiles bench/fixtures/stamp.c (static where the C library allows it: no dynamic loader in the
 * latency): `{ stamp }`, or `{ skipped }` saying why (no C compiler: the latency rows are left out,
 * the rest of the bench runs).
 */
function buildStamp(dir) {
  const out = join(dir, 'stamp')
  const src = join(here, 'fixtures', 'stamp.c')
  const cc = process.env.CC || 'cc'
  let r = spawnSync(cc, ['-O2', '-static', '-o', out, src], { encoding: 'utf8' })
  if (r.status !== 0 && !r.error) r = spawnSync(cc, ['-O2', '-o', out, src], { encoding: 'utf8' })
  if (r.error) return { skipped: `no C compiler (\`${cc}\`: ${r.error.code ?? r.error.message}) for bench/fixtures/stamp.c` }
  if (r.status !== 0) return { skipped: `\`${cc}\` cannot compile bench/fixtures/stamp.c: ${String(r.stderr).trim().split('\n')[0]}` }
  return { stamp: out }
}

/** The restart latencies (ms) in one stamp file: each `exit` line to the `start` line after it. */
function latencies(file) {
  const out = []
  let exit = null
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [what, ns] = line.split(' ')
    if (what === 'exit') exit = BigInt(ns)
    else if (what === 'start' && exit !== null) {
      out.push(Number(BigInt(ns) - exit) / 1e6)
      exit = null
    }
  }
  return out
}

/** k restarts under the Supervisor: 'on-failure', no backoff; the k-th restart's child exits 0. */
async function supervisorChunk(sup, stamp, k, aliveMs, base) {
  const [file, stop, id] = [`${base}.stamps`, `${base}.stop`, base]
  let restarts = 0
  const onRestart = (r) => {
    if (r.requestId === id && ++restarts === k) writeFileSync(stop, '')
  }
  let onStatus
  const ended = new Promise((resolve) => {
    onStatus = (r) => r.requestId === id && ['exited', 'given-up', 'killed', 'terminated'].includes(r.status) && resolve()
  })
  sup.on('restart', onRestart)
  sup.on('status', onStatus)
  try {
    sup.spawn(stamp, [file, String(aliveMs), stop], {
      requestId: id,
      stdio: 'ignore',
      restart: 'on-failure',
      backoff: { initialMs: 0, jitter: 0 },
      intensity: { maxRestarts: k + 10, windowMs: 600_000 },
    })
    await within(ended, 60_000, 'the supervised restarts')
  } finally {
    sup.off('restart', onRestart)
    sup.off('status', onStatus)
  }
  return latencies(file)
}

/** k restarts by hand: `child.on('exit', () => spawn(...))` after a nonzero exit. */
function handRolledChunk(spawnFn, stamp, k, aliveMs, base) {
  const [file, stop] = [`${base}.stamps`, `${base}.stop`]
  let restarts = 0
  const ended = new Promise((resolve, reject) => {
    const start = () => {
      const child = spawnFn(stamp, [file, String(aliveMs), stop], { stdio: 'ignore' })
      child.on('error', reject)
      child.on('exit', (code) => {
        if (code !== 1) return resolve()
        start()
        if (++restarts === k) writeFileSync(stop, '')
      })
    }
    start()
  })
  return within(ended, 60_000, 'the hand-rolled restarts').then(() => latencies(file))
}

/** Restart latency, n per side, in interleaved chunks (the order rotated each round). */
async function restartLatency(stamp, dir, n, chunk = 25, aliveMs = 10) {
  const sup = new reapkit.Supervisor({ graceMs: 2000 })
  const sides = {
    supervisor: (base) => supervisorChunk(sup, stamp, chunk, aliveMs, base),
    node: (base) => handRolledChunk(nodeSpawn, stamp, chunk, aliveMs, base),
    reapkitSpawn: (base) => handRolledChunk(reapkit.spawn, stamp, chunk, aliveMs, base),
  }
  const names = Object.keys(sides)
  const out = Object.fromEntries(names.map((s) => [s, []]))
  try {
    for (const name of names) await sides[name](join(dir, `warm-${name}`)) // warm-up, not counted
    for (let round = 0; out.supervisor.length < n; round++) {
      for (let i = 0; i < names.length; i++) {
        const name = names[(round + i) % names.length]
        out[name].push(...(await sides[name](join(dir, `${name}-${round}`))))
      }
    }
  } finally {
    await sup.shutdownAll()
    sup.dispose()
  }
  return { aliveMs, chunk, ...out }
}

const EVENTS = ['spawn', 'exit', 'restart', 'give-up', 'terminate', 'escalate', 'health-fail', 'status']

/** One start/stop: spawn `sleep`, terminate it; wall ms and this process's CPU µs. */
async function startStop(sup, observed) {
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const child = sup.spawn('sleep', ['1000'], { stdio: 'ignore' })
  await sup.terminate(child.pid)
  if (observed) sup.metrics()
  const cpu = process.cpuUsage(cpu0)
  return { wallMs: performance.now() - t0, cpuUs: cpu.user + cpu.system }
}

/** `count` finished records in a supervisor's history (its default keeps the newest 1000), 50 at a time. */
async function fillHistory(sup, count) {
  for (let done = 0; done < count; done += 50) {
    const batch = Array.from({ length: Math.min(50, count - done) }, () => sup.spawn('true', [], { stdio: 'ignore' }))
    await within(Promise.all(batch.map((c) => new Promise((r) => (c.exitCode !== null ? r() : c.once('exit', r))))), 30_000, 'the history fill')
  }
  await within((async () => { while (sup.list().some((r) => r.status === 'running')) await sleep(10) })(), 10_000, 'the history to settle')
}

/**
 * Start/stop cycles with and without a listener on every event and a metrics() read, interleaved;
 * each supervisor first holds `history` finished records (a long-running host's steady state).
 */
async function eventsCost(n, history = 0) {
  const plain = new reapkit.Supervisor({ graceMs: 2000 })
  const observed = new reapkit.Supervisor({ graceMs: 2000 })
  let heard = 0
  for (const name of EVENTS) observed.on(name, () => heard++)
  const out = { plain: { wallMs: [], cpuUs: [] }, observed: { wallMs: [], cpuUs: [] } }
  try {
    for (const sup of [plain, observed]) await fillHistory(sup, history)
    for (let i = 0; i < 10; i++) {
      await startStop(plain, false) // warm-up, not counted
      await startStop(observed, true)
    }
    heard = 0 // the calls of the measured cycles only
    for (let i = 0; i < n; i++) {
      for (const [name, sup] of i % 2 ? [['plain', plain], ['observed', observed]] : [['observed', observed], ['plain', plain]]) {
        const r = await startStop(sup, name === 'observed')
        out[name].wallMs.push(r.wallMs)
        out[name].cpuUs.push(r.cpuUs)
      }
    }
  } finally {
    for (const sup of [plain, observed]) {
      await sup.shutdownAll()
      sup.dispose()
    }
  }
  return { ...out, history, eventsHeard: heard }
}

const TICK_MS = 1000 / (Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout) || 100)
/** This process's CPU and its reaped children's (ms), from /proc/self/stat. */
function cpuNow() {
  const stat = readFileSync('/proc/self/stat', 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number)
  const usage = process.cpuUsage()
  return { host: (usage.user + usage.system) / 1000, children: (f[13] + f[14]) * TICK_MS }
}

/** Runs `loop` (which returns its stop function and start count) for windowMs; CPU over that window. */
async function overWindow(windowMs, loop) {
  const cpu0 = cpuNow()
  const t0 = performance.now()
  const run = loop()
  await sleep(windowMs)
  const cpu1 = cpuNow()
  const ms = performance.now() - t0
  const starts = run.starts()
  await run.stop()
  return { ms, starts, hostCpuMs: cpu1.host - cpu0.host, childrenCpuMs: cpu1.children - cpu0.children }
}

function supervisedLoop(backoff) {
  return () => {
    const sup = new reapkit.Supervisor({ graceMs: 2000 })
    let starts = 0
    sup.on('spawn', () => starts++)
    sup.spawn('false', [], { requestId: 'loop', stdio: 'ignore', restart: 'on-failure', backoff, intensity: { maxRestarts: 2 ** 31 - 1, windowMs: 600_000 } })
    return {
      starts: () => starts,
      stop: async () => {
        await sup.shutdownAll()
        sup.dispose()
      },
    }
  }
}

function handRolledLoop() {
  let starts = 0
  let stopped = false
  let last
  const start = () => {
    starts++
    last = nodeSpawn('false', [], { stdio: 'ignore' })
    last.on('exit', () => !stopped && start())
  }
  start()
  return {
    starts: () => starts,
    stop: async () => {
      stopped = true
      if (last.exitCode === null && last.signalCode === null) await within(new Promise((r) => last.once('exit', r)), 10_000, 'the last child')
    },
  }
}

/** A crash-looping child over one window: the default backoff, none, and a hand-rolled respawn. */
async function crashLoop(windowMs) {
  return {
    windowMs,
    tickMs: TICK_MS,
    backoff: await overWindow(windowMs, supervisedLoop({})),
    noBackoff: await overWindow(windowMs, supervisedLoop({ initialMs: 0, jitter: 0 })),
    handRolled: await overWindow(windowMs, handRolledLoop),
  }
}

export async function restartFigures(quick = process.env.BENCH_QUICK === '1') {
  const dir = mkdtempSync(join(os.tmpdir(), 'reapkit-bench-restart-'))
  try {
    const { stamp, skipped } = buildStamp(dir)
    const load = os.loadavg()[0]
    const latency = stamp ? await restartLatency(stamp, dir, quick ? 25 : 200) : { skipped }
    const events = await eventsCost(quick ? 30 : 300)
    const eventsFull = await eventsCost(quick ? 30 : 300, 1000)
    const crash = await crashLoop(quick ? 2000 : 10_000)
    return { quick, latency, events, eventsFull, crash, load: `1-minute load average ${load.toFixed(1)} at the start, ${os.loadavg()[0].toFixed(1)} at the end` }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * p50 / p99 for n >= 1000, else median and max: below 1,000 samples the 99th percentile is one or
 * two samples from the top, i.e. the max by another name, and is labelled as what it is.
 */
const stat = (xs) => (xs.length >= 1000 ? `${fmt(pct(xs, 50))} / ${fmt(pct(xs, 99))} (p50 / p99)` : `${fmt(pct(xs, 50))} median, max ${fmt(Math.max(...xs))}`)
const pctOfCore = (r) => ((r.hostCpuMs + r.childrenCpuMs) / r.ms) * 100

function eventsRows(e, when) {
  const ratio = (a, b) => `${(pct(a, 50) / pct(b, 50)).toFixed(2)}x`
  const met = pct(e.observed.cpuUs, 50) <= 1.05 * pct(e.plain.cpuUs, 50) ? 'met' : 'NOT met'
  return `| ${when}: no listener, no \`metrics()\` | ${stat(e.plain.wallMs)} | ${stat(e.plain.cpuUs)} |
| ${when}: every event heard, \`metrics()\` read | ${stat(e.observed.wallMs)} | ${stat(e.observed.cpuUs)} |
| ${when}: observed / plain (median) | ${ratio(e.observed.wallMs, e.plain.wallMs)} | ${ratio(e.observed.cpuUs, e.plain.cpuUs)} (target ≤ 1.05x: ${met}) |`
}

/** The latency table, or why it was left out. */
function latencyMarkdown(l) {
  if (l.skipped) return `Restart latency: not measured (${l.skipped}).`
  const ratio = (a, b) => `${(pct(a, 50) / pct(b, 50)).toFixed(2)}x`
  return `Restart latency: one incarnation's exit → the next one's first instruction, both stamped by the child itself
(\`bench/fixtures/stamp.c\`: \`CLOCK_MONOTONIC\` as its first instruction, and as its last before \`_exit(1)\`); each
child lives ${l.aliveMs} ms. Chunks of ${l.chunk} restarts, the three sides interleaved, ${l.supervisor.length} restarts each.

| restart | n | ms, exit → first instruction | p50 vs \`child_process.spawn\` by hand | p50 vs \`reapkit.spawn\` by hand (goal ≤ 1.25x) |
|---|---:|---|---:|---:|
| \`child.on('exit', () => child_process.spawn(...))\` | ${l.node.length} | ${stat(l.node)} | 1x | |
| \`child.on('exit', () => reapkit.spawn(...))\` | ${l.reapkitSpawn.length} | ${stat(l.reapkitSpawn)} | ${ratio(l.reapkitSpawn, l.node)} | 1x |
| Supervisor \`restart: 'on-failure'\`, \`backoff.initialMs: 0\` | ${l.supervisor.length} | ${stat(l.supervisor)} | ${ratio(l.supervisor, l.node)} | ${ratio(l.supervisor, l.reapkitSpawn)} |

The Supervisor's restart also stops what the exited incarnation left in its process group, and confirms it, before the next
one starts; the hand-rolled loops do neither. With \`backoff.initialMs: 0\` it waits on no timer (a \`setTimeout(0)\` is 1 ms
in Node), only on an immediate (one turn of the event loop: a start that fails at once cannot hold the loop) and on that
stop, which for a group found empty at the exit (\`kill(-pgid, 0)\`: ESRCH) ends in the same turn.
The \`reapkit.spawn\` rows hold a second exec (the helper's, then the command's) before the first instruction.`
}

/** Host CPU per start (ms), the same work on both sides: an immediate restart of a crashed child. */
const crashPerStart = (r) => r.hostCpuMs / r.starts
const crashCpu = (r) => r.hostCpuMs + r.childrenCpuMs

function crashMarkdown(c) {
  const tick = `${+(c.tickMs ?? 10).toFixed(3)} ms`
  const crashRow = (what, r) =>
    `| ${what} | ${r.starts} | ${fmt(r.hostCpuMs)} | ${fmt(r.childrenCpuMs)} | ${pctOfCore(r).toFixed(1)}% | ${r.starts > 1 ? fmt(crashPerStart(r)) : '—'} |`
  return `A crash-looping child (\`false\`, exit 1 at once) over one ${c.windowMs / 1000} s window, one side after the other. The
children's CPU is the kernel's count of reaped children's time, in ${tick} ticks: a figure of a few ticks is coarse.

| restart | starts | host CPU ms | children's CPU ms (${tick} ticks) | % of a core | host CPU ms per start |
|---|---:|---:|---:|---:|---:|
${crashRow("Supervisor `'on-failure'`, default backoff (100 ms × 2ⁿ, cap 30 s)", c.backoff)}
${crashRow("Supervisor `'on-failure'`, `backoff.initialMs: 0`", c.noBackoff)}
${crashRow("`child.on('exit', () => child_process.spawn(...))`", c.handRolled)}

The same work (an immediate restart each time): the Supervisor with no backoff costs the host ${(crashPerStart(c.noBackoff) / crashPerStart(c.handRolled)).toFixed(2)}x the hand-rolled
respawn's CPU per start. The default backoff is the policy's effect, not the Supervisor's cost: over the window, ${c.backoff.starts} starts
and ${fmt(crashCpu(c.backoff))} ms of CPU (host and children) instead of ${c.noBackoff.starts} starts and ${fmt(crashCpu(c.noBackoff))} ms with no backoff.`
}

export function restartMarkdown(d) {
  if (d.skipped) return `## Restarts: the Supervisor's restart policies beside a hand-rolled \`on('exit', spawn)\`\n\nNot measured: ${d.skipped}.\n`
  const { latency: l, events: e, crash: c } = d
  return `## Restarts: the Supervisor's restart policies beside a hand-rolled \`on('exit', spawn)\`

${latencyMarkdown(l)}

Events and metrics per start/stop (\`spawn('sleep')\`, then \`terminate\`; ${e.plain.wallMs.length} cycles each, interleaved): a Supervisor with a
listener on every event (${EVENTS.length} kinds, ${e.eventsHeard} calls over the measured cycles) and \`metrics()\` read after each cycle, beside one with neither;
first on fresh supervisors, then on two that already hold ${d.eventsFull.history} finished records (the default \`history\` keeps 1000).

| start/stop | wall ms | host CPU µs |
|---|---|---|
${eventsRows(e, 'fresh')}
${eventsRows(d.eventsFull, `${d.eventsFull.history} finished records`)}

${crashMarkdown(c)}

(The intensity limit is raised for these rows: with its default, 5 restarts within 60 s, the child is given up after the 5th.) ${d.load}.
`
}

/** The restart latency alone (`node bench/restart.mjs latency [n]`): the rows issue 32 item 7 tracks. */
async function latencyOnly(n) {
  const dir = mkdtempSync(join(os.tmpdir(), 'reapkit-bench-restart-'))
  try {
    const { stamp, skipped } = buildStamp(dir)
    const load = os.loadavg()[0]
    const l = stamp ? await restartLatency(stamp, dir, n) : { skipped }
    return `${latencyMarkdown(l)}\n\n${os.cpus().length} cores; 1-minute load average ${load.toFixed(1)} at the start, ${os.loadavg()[0].toFixed(1)} at the end.`
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === 'latency') {
  console.log(await latencyOnly(Number(process.argv[3] ?? 200)))
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const d = await restartFigures()
  console.log(restartMarkdown(d))
  if (process.argv[2]) writeFileSync(process.argv[2], JSON.stringify({ restart: d }, null, 1))
}
