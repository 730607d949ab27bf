// npm run bench: reapkit's figures side by side with what the field does today, in one run.
// Prints a Markdown report and writes it (plus the raw JSON and SVG plots) to bench/results/
// (bench/results/quick/ for BENCH_QUICK=1 runs, which are not tracked).
//   BENCH_QUICK=1  fewer samples and a 2 s idle window (a smoke run, e.g. in CI)
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { enterBenchCgroup } from './cgroups.mjs'

// First, before anything makes a cgroup: every cgroup a bench makes is made inside the run's own,
// and the run fails if one is left at the end (bench/cgroups.mjs).
const benchCgroup = enterBenchCgroup()
const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')
const DIST = join(root, 'dist', 'cjs', 'index.js')
const require = createRequire(import.meta.url)
const reapkit = require(DIST)
const plot = await import('./plot.mjs')
const quick = process.env.BENCH_QUICK === '1'
const N_EXIT = quick ? 30 : 100
const N_EXIT_ALONE = quick ? 100 : 500
const N_PARENT = quick ? 6 : 30
const IDLE_S = quick ? 2 : 10
const N_REQUIRE = quick ? 10 : 30

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const hr = () => process.hrtime.bigint()
const ms = (a, b) => Number(b - a) / 1e6
function pct(values, p) {
  const s = [...values].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]
}
const fmt = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(3))
const spawned = new Set()
function spawnTracked(cmd, args, opts = {}) {
  const c = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], detached: true, ...opts, env: { ...process.env, REAPKIT_DIST: DIST } })
  spawned.add(c)
  return c
}
function killAll() {
  for (const c of spawned) {
    try { process.kill(-c.pid, 'SIGKILL') } catch {}
  }
}
process.on('exit', killAll)
for (const s of ['SIGINT', 'SIGTERM']) process.on(s, () => { killAll(); process.exit(130) })
function lines(stream, onLine) {
  let buf = ''
  stream.setEncoding('utf8')
  stream.on('data', (d) => {
    buf += d
    let i
    while ((i = buf.indexOf('\n')) >= 0) {
      const l = buf.slice(0, i)
      buf = buf.slice(i + 1)
      if (l.trim()) onLine(l)
    }
  })
}
function within(promise, msTimeout, what) {
  return Promise.race([promise, sleep(msTimeout).then(() => { throw new Error(`bench: timed out waiting for ${what}`) })])
}

/**
 * N sleeping processes that are not our children: a shell starts them and reaps them. `stop()` ends
 * the shell's group (its sleepers with it) once a phase is done with them, so they do not sit
 * through the rest of the run.
 */
async function nonChildren(n) {
  const keeper = spawnTracked('sh', ['-c', `i=0; while [ $i -lt ${n} ]; do sleep 1000 & echo $!; i=$((i+1)); done; wait`])
  const pids = []
  await within(new Promise((resolve) => lines(keeper.stdout, (l) => { pids.push(Number(l)); if (pids.length === n) resolve() })), 20_000, 'sleepers')
  const stop = () => {
    try { process.kill(-keeper.pid, 'SIGKILL') } catch {}
    spawned.delete(keeper)
  }
  return { pids, stop }
}

function pollDetector(pid, every) {
  return new Promise((resolve) => {
    const t = setInterval(() => {
      try { process.kill(pid, 0) } catch {
        clearInterval(t)
        resolve(hr())
      }
    }, every)
  })
}

async function exitLatency() {
  // 1. reapkit alone (nothing else on the loop).
  const alone = []
  const first = await nonChildren(N_EXIT_ALONE)
  for (const pid of first.pids) {
    const done = reapkit.watchExit(pid).then(() => hr())
    await sleep(1)
    const t0 = hr()
    process.kill(pid, 'SIGKILL')
    alone.push(ms(t0, await within(done, 10_000, 'exit event')))
  }
  first.stop()
  // 2. The same kill seen by all three detectors at once, each poll at a random phase.
  const rows = { reapkit: [], poll10: [], poll100: [] }
  const second = await nonChildren(N_EXIT)
  for (const pid of second.pids) {
    const detectors = { reapkit: reapkit.watchExit(pid).then(() => hr()), poll10: pollDetector(pid, 10), poll100: pollDetector(pid, 100) }
    await sleep(Math.random() * 100)
    const t0 = hr()
    process.kill(pid, 'SIGKILL')
    for (const [k, p] of Object.entries(detectors)) rows[k].push(ms(t0, await within(p, 10_000, k)))
  }
  second.stop()
  return { alone, ...rows }
}

async function parentLatency() {
  const chain = join(here, 'fixtures', 'parent-chain.cjs')
  const run = async (method, parentKind) => {
    const samples = []
    const signals = []
    const kernel = []
    const batch = method === 'reapkit' ? 1 : N_PARENT // polls wait up to 2 s each: run them together
    for (let done = 0; done < N_PARENT; done += batch) {
      const chains = []
      for (let i = 0; i < batch; i++) {
        // sh stays the parent (it waits for node); a Node intermediate spawns the watcher itself.
        const p = parentKind === 'sh'
          ? spawnTracked('sh', ['-c', `"${process.execPath}" "${chain}" watcher ${method}; exit 0`])
          : spawnTracked(process.execPath, [chain, 'intermediate', method])
        const events = []
        let notify = () => {}
        lines(p.stdout, (l) => { events.push(JSON.parse(l)); notify() })
        const waitEvent = (name) => within(new Promise((resolve) => {
          const check = () => { const e = events.find((x) => x.event === name); if (e) resolve(e) }
          notify = check
          check()
        }), 15_000, name)
        chains.push({ p, events, waitEvent })
      }
      for (const c of chains) await c.waitEvent('ready')
      for (const c of chains) {
        await sleep(method === 'reapkit' ? 20 : Math.random() * 2000 / batch)
        // Reference: when the kernel reports the parent fully exited (seen by this process).
        c.dead = reapkit.watchExit(c.p.pid).then(() => hr())
        c.t0 = hr()
        c.p.kill('SIGKILL')
      }
      for (const c of chains) {
        const d = await c.waitEvent('detected')
        samples.push(ms(c.t0, BigInt(d.t)))
        kernel.push(ms(c.t0, await within(c.dead, 10_000, 'parent exit')))
        if (method === 'reapkit') {
          const s = await c.waitEvent('signal')
          signals.push(ms(c.t0, BigInt(s.t)))
        }
        try { process.kill(-c.p.pid, 'SIGKILL') } catch {}
      }
    }
    return { samples, signals, kernel }
  }
  const out = {}
  for (const kind of ['sh', 'node']) {
    const r = await run('reapkit', kind)
    const p = await run('poll2000', kind)
    out[kind] = { reapkit: r.samples, reapkitSignal: r.signals, kernel: r.kernel, poll2000: p.samples }
  }
  return out
}

async function idleCost() {
  const sleepers = await nonChildren(100)
  const pids = sleepers.pids
  const run = (method) => {
    const c = spawnTracked(process.execPath, ['--expose-gc', join(here, 'fixtures', 'idle.cjs'), method, String(IDLE_S), ...pids.map(String)])
    return within(new Promise((resolve) => lines(c.stdout, (l) => resolve(JSON.parse(l)))), (IDLE_S + 20) * 1000, `idle ${method}`)
  }
  // All four at once: the same 10 s window for every method.
  const [baseline, ours, poll100, poll10] = await Promise.all([run('none'), run('reapkit'), run('poll100'), run('poll10')])
  sleepers.stop() // the 100 sleepers sat through every later phase until the run's end
  return { baseline, reapkit: ours, poll100, poll10 }
}

const requireBench = await import('./require.mjs')
const installBench = await import('./install.mjs')
const reaping = await import('./reaping.mjs')
const keepaliveBench = await import('./keepalive.mjs')
const httpDrainBench = await import('./http-drain.mjs')
const httpCostBench = await import('./http-cost.mjs')
const spawnCostBench = await import('./spawn-cost.mjs')
const hostDeathBench = await import('./host-death.mjs')
const backstopCgroupBench = await import('./backstop-cgroup.mjs')
const escapedTreeBench = await import('./escaped-tree.mjs')
const cliBench = await import('./cli.mjs')
const wrapperStopBench = await import('./wrapper-stop.mjs')
const exitScale = await import('./exitscale.mjs')
const doctorBench = await import('./doctor.mjs')
const windowsBench = await import('./win32.mjs')
const peersBench = await import('./peers.mjs')
const containersBench = await import('./containers.mjs')
const restartBench = await import('./restart.mjs')
const started = Date.now()
const loadAtStart = os.loadavg()[0] // other work on the machine shifts every absolute time: stamped
const exit = await exitLatency()
const parent = await parentLatency()
const idle = await idleCost()
const req = requireBench.requireFigures(N_REQUIRE)
const spawnCost = process.platform === 'linux' ? await spawnCostBench.spawnCostFigures(quick ? 50 : 300) : null // (pgrp from /proc)
const hostDeath = process.platform === 'linux' ? hostDeathBench.hostDeathFigures(quick ? 5 : 20) : null // (PID namespaces)
const backstopCgroup = process.platform === 'linux' ? await backstopCgroupBench.backstopFigures(100, quick ? 2 : 5) : null
const escapedTree = process.platform === 'linux' ? await escapedTreeBench.escapedTreeFigures(quick ? 200 : 1000, quick ? 20 : 100, quick ? 2 : 5) : null
const stop = await reaping.stopTree(quick ? 5 : 30, { execaPipeSamples: quick ? 1 : 3, execaPipeCapMs: 1000 })
const execa10 = peersBench.execa10Stop(quick ? 3 : 30) // under Node 22, which execa 10 needs
const close = await reaping.closeServer(quick ? 1 : 3)
const exitscale = await exitScale.run(reapkit, { quick })
const shutdownWedged = await exitScale.shutdownWedged(reapkit, quick ? [200] : [500, 1000, 2000, 5000])
const scaling = await reaping.shutdownScaling(quick ? [1, 10, 100] : [1, 10, 100, 500])
reaping.sweep()
const tracking = await keepaliveBench.trackingOverhead(quick ? 20_000 : 200_000)
const sigterm = await keepaliveBench.sigtermToExit(quick ? 3 : 10)
const orphaned = await keepaliveBench.parentDeathToExit(quick ? 3 : 10)
const httpDrain = await httpDrainBench.httpDrainFigures(quick)
const httpCost = process.platform === 'linux' ? await httpCostBench.httpCostFigures(quick) : null // (CPU from /proc)
if (httpCost) httpCost.echo = await httpCostBench.httpCostFigures(quick, 'echo') // the drain's own cost, no SDK around it
const packed = (await import('./installed.mjs')).installPacked()
const [cliStartup, install] = (() => {
  try {
    return [cliBench.startupLatency(quick ? 20 : 100, packed.bin), installBench.installFigures(packed.tarball, { runs: quick ? 1 : 3 })]
  } finally {
    packed.cleanup()
  }
})()
const cliRss = await cliBench.residentMemory()
const cliSurvivors = await cliBench.survivorsAfterHostKill(quick ? 1 : 3)
const wrapperStop = process.platform === 'linux' ? await wrapperStopBench.wrapperStop(quick) : null // (its C fixture uses prctl)
const restart = process.platform === 'linux' ? await restartBench.restartFigures(quick) : null // (CPU from /proc, a C child)
const containers = process.platform === 'linux' ? await containersBench.containerFigures(quick) : null // (the engines of scripts/containers/setup.sh)
const doctor = await doctorBench.doctorFigures(quick ? 200 : 2000, quick ? 5 : 20)
const windows = await windowsBench.windowsFigures(quick)
killAll()
const cgroupsLeft = await benchCgroup.leftovers()

const stat = (xs) => ({ n: xs.length, p50: pct(xs, 50), p99: pct(xs, 99), max: Math.max(...xs) })
const E = { alone: stat(exit.alone), reapkit: stat(exit.reapkit), poll10: stat(exit.poll10), poll100: stat(exit.poll100) }
const P = Object.fromEntries(Object.entries(parent).map(([kind, v]) => [kind, {
  reapkit: stat(v.reapkit), signal: stat(v.reapkitSignal), kernel: stat(v.kernel), poll2000: stat(v.poll2000),
}]))
const ratio = (a, b) => `${fmt(b / a)}x`
const cpu = os.cpus()[0]?.model ?? 'unknown cpu'
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const installed = (name) => {
  try { return JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version } catch { return 'not installed' }
}
const osName = (() => {
  try { return readFileSync('/etc/os-release', 'utf8').match(/^PRETTY_NAME="?([^"\n]*)"?/m)?.[1] } catch { return undefined }
})()
const machine = {
  date: new Date().toISOString(),
  run: quick ? 'quick (BENCH_QUICK=1: fewer samples)' : 'full',
  os: `${os.type()} ${os.release()} ${os.arch()}${osName ? ` (${osName})` : ''}`,
  libc: process.report?.getReport?.().header?.glibcVersionRuntime ? `glibc ${process.report.getReport().header.glibcVersionRuntime}` : 'n/a',
  cpu: `${os.cpus().length} × ${cpu}`,
  memory: `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
  node: `${process.version} (libuv ${process.versions.uv}, N-API ${process.versions.napi})`,
  reapkit: pkg.version,
  sdk: installed('@modelcontextprotocol/sdk'),
  sdk2: `${installed('@modelcontextprotocol/client')} / ${installed('@modelcontextprotocol/server')}`,
  treeKill: installed('tree-kill'),
  execa: installed('execa'),
  capabilities: reapkit.capabilities(),
  load: `1-minute load average ${loadAtStart.toFixed(1)} at the start, ${os.loadavg()[0].toFixed(1)} at the end`,
}
const stopRows = [
  ['reapkit \`killProcessGracefully\` (SIGTERM, wait by event, confirm)', stop.reapkit],
  ['tree-kill (SIGTERM via \`ps\` walk; sends only)', stop.treeKill],
  ['SIGTERM to the group, then \`kill(-pgid, 0)\` every 100 ms', stop.poll100],
  [`execa ${machine.execa} \`subprocess.kill()\` + \`forceKillAfterDelay\`, stdio \`'ignore'\``, stop.execa],
  ...(execa10.rows ? [[`execa ${execa10.execa} \`subprocess.kill()\` with \`killDescendants\` (under Node ${execa10.node}), stdio \`'ignore'\``, execa10.rows]] : []),
]
const execaPipesSettled = stop.execaPipes.filter((r) => r.settled)
const survivorsPer = (rows) => (rows.length ? rows.reduce((s, r) => s + r.survivors, 0) / rows.length : 0)

// SVG plots, written beside latest.md and embedded in it.
const figures = {
  'exit-detection.svg': plot.ecdf({
    title: 'Exit detection: SIGKILL sent → detector reports the exit',
    subtitle: 'A process that is not our child; side-by-side rows see the same kill, each poll at a random phase.',
    panels: [{ series: [
      { name: 'reapkit watchExit (pidfd), alone', values: exit.alone, color: '#56B4E9', dash: '5 3' },
      { name: 'reapkit watchExit (pidfd), side by side', values: exit.reapkit, color: '#0072B2' },
      { name: 'kill(pid, 0) poll every 10 ms', values: exit.poll10, color: '#E69F00' },
      { name: 'kill(pid, 0) poll every 100 ms', values: exit.poll100, color: '#D55E00' },
    ] }],
  }),
  'parent-death.svg': plot.ecdf({
    title: 'Parent-death detection: parent SIGKILLed → child notices',
    subtitle: 'The kernel row is when the parent had fully exited (the floor for any detector).',
    panels: ['sh', 'node'].map((kind) => ({
      title: kind === 'sh' ? 'parent: sh' : 'parent: Node',
      series: [
        { name: 'kernel: parent fully exited (reference)', values: parent[kind].kernel, color: '#888888', dash: '4 3' },
        { name: 'reapkit watchParent onExit (pidfd)', values: parent[kind].reapkit, color: '#0072B2' },
        { name: 'reapkit death signal (PR_SET_PDEATHSIG)', values: parent[kind].reapkitSignal, color: '#56B4E9' },
        { name: 'getppid poll every 2 s', values: parent[kind].poll2000, color: '#D55E00' },
      ],
    })),
  }),
  'tree-stop.svg': plot.ecdf({
    title: 'Stopping a three-level tree (sh → sh → sleep): time until the method reports done',
    subtitle: 'Survivors per run are counted at that moment; only reapkit waits for, and confirms, the whole tree.',
    panels: [{ series: stopRows.map(([name, rows]) => ({
      name: `${name.replace(/\\?`/g, '').replace(/ \(.*\)$/, '').replace(/, stdio 'ignore'$/, '')} [${survivorsPer(rows).toFixed(1)} survivors/run]`,
      values: rows.map((r) => r.ms),
    })) }],
  }),
  'cli-startup.svg': plot.ecdf({
    title: 'Start-up: spawn → exit of /bin/true, bare and wrapped',
    subtitle: 'Interleaved runs; the difference to bare is what a wrapper adds to every server start.',
    panels: [{ series: [
      { name: 'bare', values: cliStartup.bare, color: '#888888', dash: '4 3' },
      { name: 'node_modules/.bin/reapkit -- (installed tarball)', values: cliStartup.installed, color: '#009E73' },
      { name: 'bin/reapkit -- (clone)', values: cliStartup.reapkit, color: '#0072B2' },
      { name: 'supervisor binary directly', values: cliStartup.supervisorDirect, color: '#56B4E9' },
      { name: 'Node-resident wrapper', values: cliStartup.nodeWrapper, color: '#D55E00' },
    ] }],
  }),
  'shutdown-scaling.svg': plot.lines({
    title: 'Supervisor.shutdownAll: wall time against the number of children',
    subtitle: 'Each child ignores stdin end and exits on SIGTERM after the 250 ms close window.',
    xLabel: 'children (log scale)',
    yLabel: 'wall time, ms',
    series: [{ name: 'reapkit Supervisor.shutdownAll (all children stopped concurrently)', points: scaling.map((r) => [r.n, r.ms]) }],
    refs: [{ name: 'the 250 ms close window (the floor)', y: 250 }],
  }),
}
const fig = (file, alt) => `![${alt}](${file})`

const md = `# reapkit benchmark

${quick ? '**QUICK run** (BENCH_QUICK=1: fewer samples, a smoke test; run \`npm run bench\` for the real figures).\n\n' : ''}| machine and versions | |
|---|---|
| date | ${machine.date} |
| run | ${machine.run} |
| OS, kernel | ${machine.os}, ${machine.libc} |
| CPU | ${machine.cpu}, ${machine.memory} RAM |
| load | ${machine.load} |
| Node | ${machine.node} |
| reapkit | ${machine.reapkit} |
| alternatives | @modelcontextprotocol/sdk ${machine.sdk}, tree-kill ${machine.treeKill}, execa ${machine.execa} |
| capabilities | \`${JSON.stringify(machine.capabilities)}\` |

Latency plots are empirical CDFs on a log time axis: for each x, the fraction of runs that took at most x
(further left is faster; a steep curve is a tight distribution; a dot marks the median).

## Exit detection of a process that is not our child (SIGKILL sent → promise resolved)

Each sample kills one \`sleep\` started (and reaped) by a shell, so it is not our child. In the
side-by-side rows the same kill is seen by all three detectors at once, each poll at a random phase.

| detector | n | p50 ms | p99 ms | max ms | p50 vs reapkit |
|---|---:|---:|---:|---:|---:|
| reapkit \`watchExit\` (pidfd), alone | ${E.alone.n} | ${fmt(E.alone.p50)} | ${fmt(E.alone.p99)} | ${fmt(E.alone.max)} | |
| reapkit \`watchExit\` (pidfd), side by side | ${E.reapkit.n} | ${fmt(E.reapkit.p50)} | ${fmt(E.reapkit.p99)} | ${fmt(E.reapkit.max)} | 1x |
| \`process.kill(pid, 0)\` poll every 10 ms | ${E.poll10.n} | ${fmt(E.poll10.p50)} | ${fmt(E.poll10.p99)} | ${fmt(E.poll10.max)} | ${ratio(E.reapkit.p50, E.poll10.p50)} |
| \`process.kill(pid, 0)\` poll every 100 ms | ${E.poll100.n} | ${fmt(E.poll100.p50)} | ${fmt(E.poll100.p99)} | ${fmt(E.poll100.max)} | ${ratio(E.reapkit.p50, E.poll100.p50)} |

Target: p50 ≤ 1 ms, p99 ≤ 5 ms → ${E.alone.p50 <= 1 && E.alone.p99 <= 5 ? 'met' : 'NOT met'} (alone), ${E.reapkit.p50 <= 1 && E.reapkit.p99 <= 5 ? 'met' : 'NOT met'} (side by side).

${fig('exit-detection.svg', 'Exit detection latency, ECDF: reapkit watchExit against kill(pid, 0) polls')}

## Parent-death detection (parent SIGKILLed → child notices)

The watcher's parent is SIGKILLed; times are CLOCK_MONOTONIC across processes, from the kill. The
"kernel" row is when the parent had fully exited, as this bench process saw it by its own pidfd:
no child can learn of the death before the kernel has finished it. A Node parent takes the kernel
about 2 ms to tear down (its threads and address space); \`sh\` (how hosts usually start a server)
is quick, so that row shows the mechanism itself.

| parent | detector | n | p50 ms | p99 ms | max ms | p50 vs reapkit |
|---|---|---:|---:|---:|---:|---:|
${['sh', 'node'].map((kind) => {
  const x = P[kind]
  return [
    `| ${kind} | kernel: parent fully exited (reference) | ${x.kernel.n} | ${fmt(x.kernel.p50)} | ${fmt(x.kernel.p99)} | ${fmt(x.kernel.max)} | |`,
    `| ${kind} | reapkit \`watchParent\` onExit (pidfd event) | ${x.reapkit.n} | ${fmt(x.reapkit.p50)} | ${fmt(x.reapkit.p99)} | ${fmt(x.reapkit.max)} | 1x |`,
    `| ${kind} | reapkit death signal handler (PR_SET_PDEATHSIG) | ${x.signal.n} | ${fmt(x.signal.p50)} | ${fmt(x.signal.p99)} | ${fmt(x.signal.max)} | ${ratio(x.reapkit.p50, x.signal.p50)} |`,
    `| ${kind} | getppid poll every 2 s | ${x.poll2000.n} | ${fmt(x.poll2000.p50)} | ${fmt(x.poll2000.p99)} | ${fmt(x.poll2000.max)} | ${ratio(x.reapkit.p50, x.poll2000.p50)} |`,
  ].join('\n')
}).join('\n')}

Target: p50 ≤ 1 ms, p99 ≤ 5 ms → ${P.sh.reapkit.p50 <= 1 && P.sh.reapkit.p99 <= 5 ? 'met' : 'NOT met'} with an \`sh\` parent; with a Node parent onExit follows the kernel's own ${fmt(P.node.kernel.p50)} ms teardown by ${fmt(P.node.reapkit.p50 - P.node.kernel.p50)} ms (p50).

${fig('parent-death.svg', 'Parent-death detection latency, ECDF: reapkit watchParent and PR_SET_PDEATHSIG against a getppid poll')}

## Cost of watching 100 idle processes for ${IDLE_S} s (four processes, same window)

Each process collects its start-up garbage (\`gc()\`) before the window opens: otherwise V8's memory
reducer does it inside the window, some seconds after the process goes idle, and a one-time cost of
loading code is counted as the cost of watching.

| method | CPU ms | context switches (all threads) | watcher thread wake-ups |
|---|---:|---:|---:|
| idle Node, nothing watched (baseline) | ${fmt(idle.baseline.cpuMs)} | ${idle.baseline.switches} | |
| reapkit: 100 pidfds in one epoll set | ${fmt(idle.reapkit.cpuMs)} | ${idle.reapkit.switches} | ${idle.reapkit.watcherThreadSwitches} |
| \`kill(pid, 0)\` × 100 every 100 ms | ${fmt(idle.poll100.cpuMs)} | ${idle.poll100.switches} | |
| \`kill(pid, 0)\` × 100 every 10 ms | ${fmt(idle.poll10.cpuMs)} | ${idle.poll10.switches} | |

## Exit delivery at scale (N watches, beside a C pidfd + epoll floor)

\`watchExit(pid)\` on N tiny static C processes (\`pause()\`); the C floor is bench/fixtures/exit-floor.c,
compiled at bench start, on its own set of N processes in the same run. Both sides kill with one
\`kill(2)\` per process.

${exitScale.table(exitscale)}

## \`require('reapkit')\` in a fresh process (addon included)

${requireBench.requireMarkdown(req)}

## Installing the packed tarball (\`npm install\` into a fresh project)

Median of ${install.runs} interleaved installs each (npm's cache warmed first, for all alike); "no fitting
prebuild" is the same tarball with this platform's prebuilds taken out.

| case | median s | |
|---|---:|---|
| a prebuild fits (the install step loads it, builds nothing) | ${fmt(install.ms.prebuild / 1000)} | |
| no fitting prebuild, a compiler on \`PATH\` (node-gyp builds the addon) | ${fmt(install.ms.compile / 1000)} | ${fmt(install.ms.compile / install.ms.prebuild)}x the prebuild case |
| no fitting prebuild, no compiler (only \`node\` and \`sh\` on \`PATH\`: the fallbacks) | ${fmt(install.ms.noCompiler / 1000)} | ${fmt(install.ms.noCompiler / install.ms.prebuild)}x |

The tarball: ${fmt(install.tarballBytes / 1e6)} MB; the package as installed (every target's prebuilds inside): ${fmt(install.installedBytes / 1e6)} MB.

## Stopping a three-level tree (\`sh\` → \`sh\` → \`sleep\`) and knowing it is gone

"Lag" is how long after the tree's last process really exited (seen here by pidfd) each method
reported done; negative means it reported before the tree was gone. Survivors are counted when the
method reports done (zombies do not count).

| method | n | p50 ms | p99 ms | lag p50 ms | lag p99 ms | survivors |
|---|---:|---:|---:|---:|---:|---:|
${stopRows
  .map(([name, rows]) => {
    const a = stat(rows.map((r) => r.ms))
    const lags = rows.map((r) => r.lagMs).filter((v) => v !== undefined)
    const l = lags.length ? stat(lags) : null
    return `| ${name} | ${a.n} | ${fmt(a.p50)} | ${fmt(a.p99)} | ${l ? fmt(l.p50) : '—'} | ${l ? fmt(l.p99) : '—'} | ${rows.reduce((s, r) => s + r.survivors, 0)} |`
  }).join('\n')}
| execa ${machine.execa} \`subprocess.kill()\` + \`forceKillAfterDelay\`, default stdio (pipes) | ${stop.execaPipes.length} | ${execaPipesSettled.length === stop.execaPipes.length ? fmt(pct(stop.execaPipes.map((r) => r.ms), 50)) : `not settled after ${stop.execaPipes[0]?.capMs} ms`} | | — | — | ${stop.execaPipes.reduce((s, r) => s + r.survivors, 0)} |

Target: a well-behaved tree confirmed gone within 5 ms of its last process exiting → ${pct(stop.reapkit.map((r) => r.lagMs), 99) <= 5 ? 'met' : 'NOT met'} (p99 lag). The poll loop waits on zombies: \`kill(-pgid, 0)\` succeeds until someone reaps them (this machine's PID 1 is slow to).

execa's \`kill()\` sends SIGTERM to its direct child only (\`sh\`); \`forceKillAfterDelay\` (5 s) would
SIGKILL that same child, never its descendants, and never fires here because \`sh\` exits on SIGTERM.
Its promise settles when the direct child is gone, leaving the inner \`sh\` and \`sleep\` running
(re-parented): its "lag" is undefined, the tree never goes. With execa's default stdio (pipes) the
promise does not settle at all while the orphaned \`sleep\` holds the pipes (execa waits for them);
those runs are cut after ${stop.execaPipes[0]?.capMs ?? 1000} ms and the tree is then SIGKILLed by the bench.

${execa10.rows
    ? `execa 10's \`killDescendants\` (its strongest configuration) sends SIGTERM to the whole group, so nothing is
re-parented, but it confirms nothing: its promise settles when the direct child has exited, while the
rest of the group is still on its way out; the survivors column counts the members alive at that
moment (they die of the SIGTERM a little later). Run under npm's Node ${execa10.node} (bench/peers.mjs).`
    : `execa 10 (\`killDescendants\`) not measured: ${execa10.skipped}.`}

${fig('tree-stop.svg', 'Tree stop latency, ECDF: reapkit against tree-kill, a kill(-pgid, 0) poll and execa')}

## Closing a server started through \`sh -c\` that ignores stdin end

| method | n | mean ms | survivors |
|---|---:|---:|---:|
| reapkit \`closeClient\` (stdin end, 2 s, then SIGTERM to the group) | ${close.reapkit.length} | ${fmt(close.reapkit.reduce((s, r) => s + r.ms, 0) / close.reapkit.length)} | ${close.reapkit.reduce((s, r) => s + r.survivors, 0)} |
| MCP SDK ${machine.sdk} \`StdioClientTransport.close()\` | ${close.sdk.length} | ${fmt(close.sdk.reduce((s, r) => s + r.ms, 0) / close.sdk.length)} | ${close.sdk.reduce((s, r) => s + r.survivors, 0)} |

The SDK signals only its direct child (\`sh\`); the real server is left running, re-parented.

## \`Supervisor.shutdownAll\` of children that ignore SIGTERM (close 250 ms + grace 500 ms)

${exitScale.shutdownTable(shutdownWedged)}

## \`Supervisor.shutdownAll\` against the number of children

Each child ignores stdin end and exits on SIGTERM: every stop takes the 250 ms close window, then a
signal. Wall time should follow the slowest child, not the count.

| children | wall ms | escalated | survivors |
|---:|---:|---:|---:|
${scaling.map((r) => `| ${r.n} | ${fmt(r.ms)} | ${r.escalated} | ${r.survivors} |`).join('\n')}

${fig('shutdown-scaling.svg', 'shutdownAll wall time against the number of children')}

## Servers: the keepalive

Per-request tracking cost, in process (${quick ? '20,000' : '200,000'} calls each, mean):

| call | ns per call | added by tracking |
|---|---:|---:|
| \`await keepalive.run(fn)\` | ${fmt(tracking.run)} | ${fmt(tracking.run - tracking.untracked)} |
| \`await (async () => fn())()\` (untracked) | ${fmt(tracking.untracked)} | |
| \`begin()\` … \`done()\` around a synchronous call | ${fmt(tracking.begin)} | ${fmt(tracking.begin - tracking.syncBare)} |
| the synchronous call alone | ${fmt(tracking.syncBare)} | |

An idle server leaving (a Node process with createKeepalive; exit seen here by pidfd):

| event → server exited | n | p50 ms | p99 ms | p50 vs reapkit |
|---|---:|---:|---:|---:|
| SIGTERM (keepalive: drain, flush, report, exit) | ${sigterm.length} | ${fmt(pct(sigterm, 50))} | ${fmt(pct(sigterm, 99))} | |
| parent SIGKILLed, keepalive (kernel death signal + pidfd) | ${orphaned.reapkit.length} | ${fmt(pct(orphaned.reapkit, 50))} | ${fmt(pct(orphaned.reapkit, 99))} | 1x |
| parent SIGKILLed, server polling getppid every 2 s | ${orphaned.poll2000.length} | ${fmt(pct(orphaned.poll2000, 50))} | ${fmt(pct(orphaned.poll2000, 99))} | ${ratio(pct(orphaned.reapkit, 50), pct(orphaned.poll2000, 50))} |

${spawnCost ? spawnCostBench.spawnCostMarkdown(spawnCost).trimEnd() : ''}

${hostDeath ? hostDeathBench.hostDeathMarkdown(hostDeath).trimEnd() : ''}

${backstopCgroup ? backstopCgroupBench.backstopMarkdown(backstopCgroup).trimEnd() : ''}

${escapedTree ? escapedTreeBench.escapedTreeMarkdown(escapedTree).trimEnd() : ''}

${httpDrainBench.httpDrainMarkdown(httpDrain).trimEnd()}

${httpCost ? httpCostBench.httpCostMarkdown(httpCost).trimEnd() : ''}

${containers ? containersBench.containerMarkdown(containers).trimEnd() : ''}

${restart ? restartBench.restartMarkdown(restart).trimEnd() : ''}

## The \`reapkit\` command (a server wrapped as \`reapkit -- command\`)

Start-up, spawn → exit of \`/bin/true\` (${cliStartup.bare.length} runs each, interleaved; p50 is the median):

| how | p50 ms | p95 ms | added p50 ms | target |
|---|---:|---:|---:|---|
| bare | ${fmt(pct(cliStartup.bare, 50))} | ${fmt(pct(cliStartup.bare, 95))} | | |
| \`node_modules/.bin/reapkit --\`, installed from the packed tarball (npm's symlink → sh launcher → native supervisor) | ${fmt(pct(cliStartup.installed, 50))} | ${fmt(pct(cliStartup.installed, 95))} | ${fmt(pct(cliStartup.installed, 50) - pct(cliStartup.bare, 50))} | ≤ 1.5 ms: ${pct(cliStartup.installed, 50) - pct(cliStartup.bare, 50) <= 1.5 ? 'met' : 'NOT met'} |
| \`bin/reapkit --\` in a clone (sh launcher → native supervisor) | ${fmt(pct(cliStartup.reapkit, 50))} | ${fmt(pct(cliStartup.reapkit, 95))} | ${fmt(pct(cliStartup.reapkit, 50) - pct(cliStartup.bare, 50))} | ≤ 60 ms: ${pct(cliStartup.reapkit, 50) - pct(cliStartup.bare, 50) <= 60 ? 'met' : 'NOT met'} |
| the supervisor binary directly (\`supervisorPath()\`) | ${fmt(pct(cliStartup.supervisorDirect, 50))} | ${fmt(pct(cliStartup.supervisorDirect, 95))} | ${fmt(pct(cliStartup.supervisorDirect, 50) - pct(cliStartup.bare, 50))} | |
| a Node-resident wrapper (spawn, forward signals) | ${fmt(pct(cliStartup.nodeWrapper, 50))} | ${fmt(pct(cliStartup.nodeWrapper, 95))} | ${fmt(pct(cliStartup.nodeWrapper, 50) - pct(cliStartup.bare, 50))} | |

${fig('cli-startup.svg', 'Start-up latency, ECDF: bare, reapkit --, the supervisor binary, a Node-resident wrapper')}

Resident memory of the supervising process, 500 ms in, command \`sleep\`: reapkit ${(cliRss.reapkit / 1024).toFixed(2)} MiB
(target ≤ 4 MiB: ${cliRss.reapkit <= 4096 ? 'met' : 'NOT met'}), Node-resident wrapper ${(cliRss.nodeWrapper / 1024).toFixed(1)} MiB (${ratio(cliRss.reapkit, cliRss.nodeWrapper)}).

Survivors ${cliSurvivors[0]?.settleMs / 1000} s after the host (a Node process holding the server's stdio) is SIGKILLed; the wrapper ran
with \`--close-timeout 500 --grace 1000\`:

| server | wrapper | rounds | processes | survivors |
|---|---|---:|---:|---:|
${cliSurvivors.map((r) => `| ${r.scenario} | ${r.wrapped ? '\`reapkit --\`' : 'none'} | ${r.rounds} | ${r.processes} | ${r.survivors} |`).join('\n')}

${wrapperStop ? wrapperStopBench.wrapperStopMarkdown(wrapperStop) : '(The stop-path rows run on Linux only.)'}
## \`reapkit doctor\`: one listing, and exactness against name matching

${doctor === null ? 'Skipped: needs Linux, root and `unshare` (it runs in a private PID namespace).' : `In a private PID namespace holding ${doctor.processes} processes (mostly idle \`pause\` programs), after a host
holding three stdio servers (behind \`sh -c\` on pipes, behind \`npx\` with the real memory server, one ignoring SIGTERM)
was SIGKILLed, next to decoys whose hosts live (one named \`mcp-decoy\`, a \`sleep | cat\`), a terminal, /dev/null and another user's orphan:

| one listing (\`findOrphans()\`, in process) | runs | p50 ms | max ms |
|---|---:|---:|---:|
| wall | ${doctor.wall.length} | ${fmt(pct(doctor.wall, 50))} | ${fmt(Math.max(...doctor.wall))} |
| CPU (user + system) | ${doctor.cpu.length} | ${fmt(pct(doctor.cpu, 50))} | ${fmt(Math.max(...doctor.cpu))} |
| \`reapkit doctor --json\` (Node start-up included), wall | ${doctor.cli.length} | ${fmt(pct(doctor.cli, 50))} | ${fmt(Math.max(...doctor.cli))} |

Target for one listing: under 100 ms (wall): ${pct(doctor.wall, 50) < 100 ? 'met' : 'NOT met'} at the median.

| method | leaked processes found | missed | false positives (decoys hit) |
|---|---:|---:|---:|
| \`reapkit doctor\` | ${doctor.doctor.found} / ${doctor.truth} | ${doctor.doctor.missed} | ${doctor.doctor.falsePositives} (${doctor.doctor.decoysHit}) |
| \`pgrep -f "mcp\\|npx"\` | ${doctor.pgrep.found} / ${doctor.truth} | ${doctor.pgrep.missed} | ${doctor.pgrep.falsePositives} (${doctor.pgrep.decoysHit}) |`}

## Windows (under Wine)

${windowsBench.windowsMarkdown(windows)}

Total bench time ${((Date.now() - started) / 1000).toFixed(1)} s. Raw samples: \`bench/results/${quick ? 'quick/' : ''}latest.json\`. Plots: ${Object.keys(figures).map((f) => `[${f}](${f})`).join(', ')}.
`
// A quick run (CI's smoke run, or a local check) goes to results/quick/ (not tracked), so it never
// replaces the committed report of a full run.
const outDir = quick ? join(here, 'results', 'quick') : join(here, 'results')
mkdirSync(outDir, { recursive: true })
for (const [file, svg] of Object.entries(figures)) writeFileSync(join(outDir, file), svg)
writeFileSync(join(outDir, 'latest.md'), md)
writeFileSync(join(outDir, 'latest.json'), JSON.stringify({ quick, machine, exit, parent, idle, require: req, install, stop, close, exitscale, shutdownWedged, scaling, tracking, sigterm, orphaned, spawnCost, hostDeath, backstopCgroup, httpDrain, httpCost, cliStartup, cliRss, cliSurvivors, wrapperStop, doctor, windows, containers, execa10, restart }, null, 1))
console.log(md)
// A full run also rewrites the figures table of docs/figures.md from this very run (bench/readme.mjs).
if (!quick) (await import('./readme.mjs')).writeReadme(join(outDir, 'latest.json'))
benchCgroup.leave()
// A cgroup left by a bench (a wrapper it SIGKILLed: it could not remove its own) fails the run:
// removed above, named here. Where no cgroup is ours, no bench made one: nothing to check.
if (benchCgroup.path === null) console.error(`bench: the cgroup check was not made: ${benchCgroup.why}`)
if (cgroupsLeft.length > 0) {
  console.error(`bench: cgroups left behind by a bench (removed now):\n  ${cgroupsLeft.join('\n  ')}`)
  process.exit(1)
}
process.exit(0)
