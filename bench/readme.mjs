// Writes the figures table of docs/figures.md from one bench run (bench/results/latest.json),
// between the markers <!-- bench:figures:start --> and <!-- bench:figures:end -->. So every figure
// in the docs comes from the same run as its neighbours, beside its alternative or floor from that
// run, with the ratio, labelled with the statistic it really is:
//   n >= 100: p50 / p99;  10 <= n < 100: median and max;  n < 10: mean of n;  one sample: "1 run".
// `npm run bench` calls it after a full run; `node bench/readme.mjs [results.json]` by hand.
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const START = '<!-- bench:figures:start -->'
const END = '<!-- bench:figures:end -->'

const fmt = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v >= 1 ? v.toFixed(2) : v.toFixed(3))
function pct(values, p) {
  const s = [...values].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]
}
const mean = (xs) => xs.reduce((s, x) => s + x, 0) / xs.length
/** The statistic a sample can support, and its value to compare by (the median, or the mean). */
export function stat(xs, unit = 'ms') {
  const n = xs.length
  if (n === 0) return { text: '—', center: NaN }
  if (n === 1) return { text: `${fmt(xs[0])} ${unit} (1 run)`, center: xs[0] }
  if (n < 10) return { text: `${fmt(mean(xs))} ${unit} (mean of ${n})`, center: mean(xs) }
  if (n < 100) return { text: `${fmt(pct(xs, 50))} ${unit} median, max ${fmt(Math.max(...xs))} (n=${n})`, center: pct(xs, 50) }
  return { text: `${fmt(pct(xs, 50))} / ${fmt(pct(xs, 99))} ${unit} p50 / p99 (n=${n})`, center: pct(xs, 50) }
}
/** How many times `theirs` is `ours` (both the same statistic, from the same run). */
const times = (ours, theirs) => (Number.isFinite(ours) && Number.isFinite(theirs) && ours > 0 ? `${fmt(theirs / ours)}x` : '')
const sum = (rows, key) => rows.reduce((s, r) => s + r[key], 0)

/**
 * The crash loop's rows: the same work side by side (an immediate restart: the Supervisor with no
 * backoff beside a hand-rolled respawn, host CPU per start), then the default backoff's effect as
 * what it is, the policy's (fewer starts, less CPU), not the Supervisor's cost.
 */
function crashRows(c, add) {
  const perStart = (r) => r.hostCpuMs / r.starts
  const window = `one ${c.windowMs / 1000} s window`
  add(
    `a crash-looping child restarted at once, over ${window}: host CPU per start`,
    `Supervisor \`'on-failure'\`, \`backoff.initialMs: 0\`: ${fmt(perStart(c.noBackoff))} ms (${c.noBackoff.starts} starts)`,
    `hand-rolled \`child.on('exit', () => spawn(...))\`: ${fmt(perStart(c.handRolled))} ms (${c.handRolled.starts} starts)`,
    `${(perStart(c.noBackoff) / perStart(c.handRolled)).toFixed(2)}x the hand-rolled`,
  )
  const tick = +(c.tickMs ?? 10).toFixed(3)
  const cpu = (r) => `${fmt(r.hostCpuMs)} ms host + children's ${Math.round(r.childrenCpuMs / tick)} ticks (${Math.round(r.childrenCpuMs)} ms)`
  add(
    `the same child under the default backoff (the policy's effect, not the Supervisor's cost), over ${window}: starts, CPU (children's counted in ${tick} ms ticks)`,
    `default backoff: ${c.backoff.starts} starts, ${cpu(c.backoff)}`,
    `no backoff: ${c.noBackoff.starts} starts, ${cpu(c.noBackoff)}`,
    `${fmt((c.noBackoff.hostCpuMs + c.noBackoff.childrenCpuMs) / (c.backoff.hostCpuMs + c.backoff.childrenCpuMs))}x less CPU`,
  )
}

/** The table's rows: [what, reapkit, alternative or floor (same run), ratio]. Rows whose data the run lacks are left out. */
export function rows(d) {
  const out = []
  const add = (what, ours, theirs, ratio) => out.push(`| ${what} | ${ours} | ${theirs} | ${ratio} |`)
  if (d.exit) {
    const r = stat(d.exit.reapkit)
    const p10 = stat(d.exit.poll10)
    const p100 = stat(d.exit.poll100)
    add('exit of a non-child, kill → promise (the same kills, side by side)', r.text, `\`kill(pid, 0)\` every 10 ms: ${p10.text}; every 100 ms: ${p100.text}`, `${times(r.center, p10.center)}, ${times(r.center, p100.center)}`)
  }
  if (d.parent?.sh) {
    const r = stat(d.parent.sh.reapkit)
    const k = stat(d.parent.sh.kernel)
    const p = stat(d.parent.sh.poll2000)
    add('parent (`sh`) SIGKILLed → `onExit`', r.text, `the kernel finished the parent: ${k.text}; \`getppid\` poll every 2 s: ${p.text}`, times(r.center, p.center))
  }
  if (d.idle) {
    const { reapkit: r, poll100: p } = d.idle
    add('100 idle watched processes, one 10 s window', `${fmt(r.cpuMs)} ms CPU, ${r.watcherThreadSwitches} watcher wake-ups`, `\`kill(pid, 0)\` every 100 ms: ${fmt(p.cpuMs)} ms CPU, ${p.switches} context switches`, times(r.cpuMs, p.cpuMs))
  }
  if (d.require) {
    const r = stat(d.require.reapkit)
    const f = stat(d.require.floor)
    // Since issue 32, reapkit holds Node's own spawn from require on: node:child_process is its floor too.
    const c = d.require.childProcess ? `; the same and \`node:child_process\`: ${stat(d.require.childProcess).text}` : ''
    // The addon loads on first use: what the first call into it adds is shown beside the require.
    const a = d.require.reapkitAddon ? `; with its first call into the addon (which loads then): ${stat(d.require.reapkitAddon).text}` : ''
    add('`require(\'reapkit\')`, fresh process', r.text + a, `a one-line file: ${f.text}${c}`, times(f.center, r.center) + ' of the floor')
    // The ESM entry (since it loads no part: scripts/build-ts.mjs) beside the ESM loader's own start-up.
    if (d.require.importReapkit && d.require.importFloor) {
      const i = stat(d.require.importReapkit)
      const fi = stat(d.require.importFloor)
      add('`import` of reapkit (ESM), fresh process', i.text, `a one-line module: ${fi.text}`, times(fi.center, i.center) + ' of the floor')
    }
  }
  if (d.install) {
    const i = d.install
    add(
      'install the tarball as a dependency (median s)',
      `a prebuild fits: ${fmt(i.ms.prebuild / 1000)} s; tarball ${fmt(i.tarballBytes / 1e6)} MB, installed ${fmt(i.installedBytes / 1e6)} MB`,
      `no fitting prebuild: with a compiler ${fmt(i.ms.compile / 1000)} s (node-gyp), without one ${fmt(i.ms.noCompiler / 1000)} s (the fallbacks)`,
      times(i.ms.prebuild, i.ms.compile) + ' (compile)',
    )
  }
  if (d.stop) {
    const r = stat(d.stop.reapkit.map((x) => x.ms))
    const lag = stat(d.stop.reapkit.map((x) => x.lagMs))
    const tk = stat(d.stop.treeKill.map((x) => x.ms))
    const poll = stat(d.stop.poll100.map((x) => x.ms))
    const n = d.stop.reapkit.length
    add(
      `stop a 3-level tree and confirm it gone (${n} trees each)`,
      `${r.text}; done ${fmt(lag.center)} ms (median) after its last process exited; ${sum(d.stop.reapkit, 'survivors')} survivors`,
      `tree-kill: ${tk.text} to send, ${sum(d.stop.treeKill, 'survivors')} processes still alive at its callback; ` +
        `\`kill(-pgid, 0)\` every 100 ms: ${poll.text}; execa \`kill()\`: ${sum(d.stop.execa, 'survivors')} survivors (direct child only)` +
        (d.execa10?.rows ? `; execa ${d.execa10.execa} with \`killDescendants\`: ${stat(d.execa10.rows.map((x) => x.ms)).text}, ${sum(d.execa10.rows, 'survivors')} processes still alive when its promise settled` : ''),
      times(r.center, poll.center) + ' (poll)',
    )
  }
  const ctr = d.containers?.rows
  if (ctr) {
    // n < 10 here (each sample is a real container); the statistic is said as it is.
    const gone = (rows) => {
      const ms = rows.filter((r) => !r.survived && r.ms !== null).map((r) => r.ms)
      return ms.length === 0 ? `not gone after ${d.containers.boundMs / 1000} s` : stat(ms).text
    }
    const left = (rows) => `${rows.filter((r) => r.survived).length} of ${rows.length} left running`
    add(
      `host SIGKILLed → its \`docker run -i --rm\` container gone (${d.containers.engine}; PID 1 ignores SIGTERM and stdin end)`,
      `\`reapkit -- docker run …\`: ${gone(ctr.reapkit)}; ${left(ctr.reapkit)}`,
      `plain: ${gone(ctr.plain)}, ${left(ctr.plain)}; \`--init\`: ${gone(ctr.init)}, ${left(ctr.init)}`,
      '',
    )
    add(
      'close a containerized server (`docker run -i --rm`)',
      `\`closeClient()\`: ${gone(ctr.closeReapkit)}; ${left(ctr.closeReapkit)}`,
      `MCP SDK \`close()\`: ${stat(ctr.closeSdk.map((r) => r.ms).filter((v) => v !== null)).text}; ${left(ctr.closeSdk)}`,
      '',
    )
  }
  if (d.close) {
    const r = stat(d.close.reapkit.map((x) => x.ms))
    const s = stat(d.close.sdk.map((x) => x.ms))
    add(
      'close a server behind `sh -c` that ignores stdin end',
      `${r.text}, ${sum(d.close.reapkit, 'survivors')} survivors`,
      `MCP SDK ${d.machine.sdk} \`close()\`: ${s.text}, server left running ${sum(d.close.sdk, 'survivors')} of ${d.close.sdk.length}`,
      times(r.center, s.center),
    )
  }
  if (d.orphaned) {
    const r = stat(d.orphaned.reapkit)
    const p = stat(d.orphaned.poll2000)
    add('idle server: parent SIGKILLed → server exited', r.text, `a server polling \`getppid\` every 2 s: ${p.text}`, times(r.center, p.center))
  }
  if (d.spawnCost) {
    const r = stat(d.spawnCost.rows.reapkit.exited)
    const n = stat(d.spawnCost.rows.node.exited)
    add(
      '`spawn(\'true\')` → exit (own group, death signal; returns once the target exec\'d)',
      `${r.text}; group formed at return in ${d.spawnCost.formed} of ${d.spawnCost.n}`,
      `\`child_process.spawn\`: ${n.text}`,
      `${fmt(r.center / n.center)}x Node's`,
    )
    const rr = stat(d.spawnCost.rows.reapkit.returned)
    const nr = stat(d.spawnCost.rows.node.returned)
    add('the `spawn(\'true\')` call itself: the event loop held until it returns', rr.text, `\`child_process.spawn\`: ${nr.text}`, `${fmt(rr.center / nr.center)}x Node's (goal ≤ 1.25x)`)
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
    const { cpu, starts } = d.spawnCost
    if (cpu) {
      const [rc, nc] = [median(cpu.reapkit), median(cpu.node)]
      add(`parent CPU per \`spawn('true')\` to its exit (\`process.cpuUsage\`, median of ${cpu.reapkit.length} chunks of ${cpu.chunk})`, `${fmt(rc)} ms`, `\`child_process.spawn\`: ${fmt(nc)} ms`, `${fmt(rc / nc)}x Node's (goal ≤ 1.25x)`)
    }
    if (starts) {
      const sum = (xs) => xs.reduce((a, b) => a + b, 0)
      const [rs, ns] = [sum(starts.reapkit), sum(starts.node)]
      add(`${starts.n.toLocaleString('en')} long-running children (\`sleep\`) started in one loop (mean of ${starts.reapkit.length} rounds)`, `${fmt(rs / starts.reapkit.length)} ms`, `\`child_process.spawn\`: ${fmt(ns / starts.node.length)} ms`, `${fmt(rs / ns)}x Node's (goal ≤ 1.25x)`)
    }
  }
  if (d.httpCost) {
    const cpu = (side) => stat(d.httpCost.rows[side].map((x) => x.cpuUsPerRequest).filter((v) => v !== null), 'µs')
    const rps = (side) => stat(d.httpCost.rows[side].map((x) => x.rps), 'req/s')
    const [dc, pc, dr, pr] = [cpu('drain'), cpu('plain'), rps('drain'), rps('plain')]
    add(
      'a trivial tool call on an HTTP MCP server (2.x, stateless, 10 connections): server CPU per request; requests/s',
      `under \`withHttpKeepalive\`: ${dc.text}; ${dr.text}`,
      `the SDK alone: ${pc.text}; ${pr.text}`,
      // The verdict is the median of the per-round ratios (each round pairs both sides under one load).
      `${fmt(d.httpCost.cpuRatio)}x (CPU), ${fmt(d.httpCost.rpsRatio)}x (req/s), medians of ${d.httpCost.rounds ?? 'the'} paired rounds: 1 = free`,
    )
    const e = d.httpCost.echo
    if (e) {
      add(
        "the drain's own cost per request: the same load on a bare `node:http` server that echoes the body",
        `under \`withHttpKeepalive\`: ${fmt(e.cpuUs.drain)} µs CPU per request, ${fmt(e.rps.drain)} req/s (medians, n=${e.rows.drain.length} slices)`,
        `bare: ${fmt(e.cpuUs.plain)} µs, ${fmt(e.rps.plain)} req/s (n=${e.rows.plain.length})`,
        `+${fmt(e.cpuUs.drain - e.cpuUs.plain)} µs per request; ${fmt(e.cpuRatio)}x (CPU)`,
      )
    }
  }
  if (d.cliStartup) {
    const bare = pct(d.cliStartup.bare, 50)
    const added = (xs) => stat(xs.map((x) => x - bare))
    const nw = added(d.cliStartup.nodeWrapper)
    if (d.cliStartup.installed) {
      const i = added(d.cliStartup.installed)
      const c = added(d.cliStartup.reapkit)
      add('`reapkit -- true` start-up, added over bare: installed from the packed tarball (`node_modules/.bin/reapkit`); in a clone (`bin/reapkit`)', `${i.text}; clone: ${c.text}`, `a Node-resident wrapper: ${nw.text}`, times(i.center, nw.center))
    } else {
      const r = added(d.cliStartup.reapkit)
      add('`reapkit -- true` start-up, added over bare', r.text, `a Node-resident wrapper: ${nw.text}`, times(r.center, nw.center))
    }
  }
  if (d.cliRss) {
    add('the wrapper\'s resident memory', `${(d.cliRss.reapkit / 1024).toFixed(2)} MiB (1 sample)`, `a Node-resident wrapper: ${(d.cliRss.nodeWrapper / 1024).toFixed(1)} MiB`, times(d.cliRss.reapkit, d.cliRss.nodeWrapper))
  }
  if (d.cliSurvivors) {
    const wrapped = d.cliSurvivors.filter((r) => r.wrapped)
    const bare = d.cliSurvivors.filter((r) => !r.wrapped)
    add(
      'host SIGKILLed: survivors (`sh -c` server; server that daemonizes a helper)',
      `${wrapped.map((r) => `${r.survivors} of ${r.processes}`).join('; ')} with \`reapkit --\``,
      `${bare.map((r) => `${r.survivors} of ${r.processes}`).join('; ')} without it`,
      '',
    )
  }
  if (d.exitscale) {
    for (const r of d.exitscale.all) {
      add(
        `all ${r.n.toLocaleString('en')} watched processes SIGKILLed at once: every promise settled (median of ${r.rounds})`,
        `${fmt(r.settledMs)} ms; longest event-loop gap ${fmt(r.maxBlockMs)} ms (nothing watched: ${fmt(r.baseBlockMs)} ms), of which at most ${fmt(r.ownBlockMs ?? NaN)} ms the main thread's own work; ${r.fdsPerWatch.toFixed(2)} descriptors per watch`,
        `C pidfd + epoll: ${fmt(r.floorMs)} ms`,
        `${(r.settledMs / r.floorMs).toFixed(2)}x the floor`,
      )
    }
    const { one } = d.exitscale
    const r = stat(one.reapkit)
    const f = stat(one.floor)
    add(`one exit among ${one.n.toLocaleString('en')} watches`, r.text, `C pidfd + epoll: ${f.text}`, `${(r.center / f.center).toFixed(2)}x the floor`)
  }
  for (const row of d.shutdownWedged ?? []) {
    const { supervisor: a, handRolled: b } = row
    add(
      `\`shutdownAll\` of ${row.n} children ignoring stdin end and SIGTERM (close 250 + grace 500; 1 run)`,
      `${fmt(a.ms)} ms, ${fmt(a.cpuMs)} ms CPU, ${a.capped} capped`,
      `a hand-rolled \`Promise.all\` of \`closeClient\`: ${fmt(b.ms)} ms, ${fmt(b.cpuMs)} ms CPU`,
      `CPU ${(a.cpuMs / b.cpuMs).toFixed(2)}x; wall ${a.ms <= 1750 ? 'within' : 'over'} its budget (close + grace + 1 s = 1750 ms)`,
    )
  }
  if (d.wrapperStop) {
    const { grace, tree } = d.wrapperStop
    const g = grace[grace.length - 1]
    add(
      `\`reapkit --\` during a ${g.graceMs / 1000} s grace held by an escaped SIGTERM-ignoring helper, ${g.unrelated} unrelated processes (one ${g.windowMs / 1000} s window)`,
      `${g.gracePct.toFixed(2)}% of a core`,
      `the same wrapper idle: ${g.idlePct.toFixed(2)}%`,
      '',
    )
    const w = stat(tree.wrapper)
    const f = stat(tree.floor)
    add(`stop a ${tree.n}-process tree through \`reapkit --\`, ${tree.unrelated} unrelated processes`, w.text, `C floor (\`killpg\` and reap as a subreaper): ${f.text}`, `${(w.center / f.center).toFixed(2)}x the floor`)
  }
  if (d.doctor) {
    const x = d.doctor
    const w = stat(x.wall)
    add(
      `\`reapkit doctor\`: one listing among ${x.processes} processes, and the leaked trees of the test scenario`,
      `${w.text}; found ${x.doctor.found} of ${x.truth}, ${x.doctor.falsePositives} false positives`,
      `\`pgrep -f "mcp|npx"\`: found ${x.pgrep.found} of ${x.truth}, ${x.pgrep.falsePositives} false positives`,
      '',
    )
  }
  if (d.restart && !d.restart.skipped) {
    const { latency: l, events: e, crash: c } = d.restart
    if (l && !l.skipped) {
      const s = stat(l.supervisor)
      const h = stat(l.node)
      const k = stat(l.reapkitSpawn)
      add('restart of a crashed child: its exit → the new child\'s first instruction (both stamped by the child)', `Supervisor \`restart: 'on-failure'\`, no backoff: ${s.text}`, `hand-rolled \`child.on('exit', () => spawn(...))\`: ${h.text} with \`child_process.spawn\`, ${k.text} with reapkit's`, `${fmt(s.center / h.center)}x the hand-rolled with Node's, ${fmt(s.center / k.center)}x with reapkit's (goal ≤ 1.25x)`)
    }
    for (const [x, when] of [[e, 'a fresh Supervisor'], [d.restart.eventsFull, `${d.restart.eventsFull?.history} finished records in its history`]]) {
      if (!x) continue
      const [o, p] = [stat(x.observed.cpuUs, 'µs'), stat(x.plain.cpuUs, 'µs')]
      add(`events and metrics, per start/stop (${when}): host CPU with a listener on every event and \`metrics()\` read`, o.text, `without them: ${p.text}`, `${(o.center / p.center).toFixed(2)}x (target ≤ 1.05x)`)
    }
    if (c) crashRows(c, add)
  }
  if (d.windows && !d.windows.skipped) {
    const w = d.windows
    const r = stat(w.exit.reapkit)
    const poll = stat(w.exit.poll)
    add(`Windows (${w.wine}, node.exe ${w.node}): exit of a child, kill → promise (the same kills)`, r.text, `\`process.kill(pid, 0)\` every 10 ms: ${poll.text}`, `${(poll.center / r.center).toFixed(1)}x`)
    const t = w.trees
    add(
      `Windows (Wine): stop a 20-process tree (servers behind \`cmd /c\`), survivors 500 ms later`,
      `${sum(t.reapkit, 'survivors')} of ${sum(t.reapkit, 'processes')} (${t.reapkit.length} rounds; its job, confirmed empty)`,
      `\`taskkill /F /PID\` (Wine 8 has no \`/T\`): ${sum(t.taskkill, 'survivors')} of ${sum(t.taskkill, 'processes')}; \`subprocess.kill()\`: ${sum(t.kill, 'survivors')} of ${sum(t.kill, 'processes')}`,
      '',
    )
  }
  for (const row of d.headlines ?? []) add(row.what, row.ours, row.theirs, row.ratio ?? '') // rows the bench modules add
  return out
}

export function table(d) {
  const m = d.machine
  return [
    `Measured by \`npm run bench\` on ${m.cpu}, ${m.os}, Node ${m.node.split(' ')[0]}, ${m.date.slice(0, 10)}${m.load ? ` (${m.load})` : ''}: all rows from that one run.`,
    'Absolute times depend on the machine (a machine half as fast doubles most of them); the ratios',
    'against the alternative measured in the same run are what carries over.',
    '',
    '| what | reapkit | alternative or floor, same run | ratio |',
    '|---|---|---|---|',
    ...rows(d),
  ].join('\n')
}

/** The page that holds the figures table (the README's Figures section before the docs/ split). */
const PAGE = join('docs', 'figures.md')

/** Rewrites the figures section of docs/figures.md from the run in `file` (a full run only). */
export function writeReadme(file = join(here, 'results', 'latest.json')) {
  const data = JSON.parse(readFileSync(file, 'utf8'))
  if (data.quick) throw new Error(`${file} is a quick run: the docs take figures from full runs only`)
  const page = join(here, '..', PAGE)
  const text = readFileSync(page, 'utf8')
  const a = text.indexOf(START)
  const b = text.indexOf(END)
  if (a < 0 || b < a) throw new Error(`${PAGE} has no ${START} … ${END} section`)
  writeFileSync(page, `${text.slice(0, a + START.length)}\n${table(data)}\n${text.slice(b)}`)
  console.log(`${PAGE} figures written from ${file} (${data.machine.date})`)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) writeReadme(process.argv[2])
