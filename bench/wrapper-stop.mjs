// Figures for the `reapkit` command's stop path (issue 11 item 3), each beside its reference from the
// same run. Called by run.mjs; also runs alone: `node bench/wrapper-stop.mjs` (BENCH_QUICK=1 honoured).
//  - CPU of the wrapper during the grace of a stop, an escaped helper that ignores SIGTERM keeping
//    it waiting, with 0 and N unrelated processes on the machine; beside the same wrapper idle;
//  - wall time to stop a 1,000-process tree through the wrapper (SIGTERM to the wrapper → the
//    wrapper has exited, every process gone), beside the C floor (killpg + reap, as a subreaper),
//    with N unrelated processes on the machine.
// The unrelated processes and the trees are small static C programs (bench/fixtures/pauser.c), so
// that their count, not their cost, is what the machine carries. Every process started here is
// killed by a pid or group id we hold (the herd's leader and the wrapper are our unreaped children).
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')
const BIN = join(root, 'bin', 'reapkit')
const SUPERVISOR = process.env.REAPKIT_SUPERVISOR || join(root, 'build', 'Release', 'helper', 'reapkit-supervise')
const sleep = (t) => new Promise((r) => setTimeout(r, t))
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

/** Compiles bench/fixtures/pauser.c (static where the C library allows it). */
export function buildPauser() {
  const dir = mkdtempSync(join(tmpdir(), 'reapkit-bench-pauser-'))
  const out = join(dir, 'pauser')
  const src = join(here, 'fixtures', 'pauser.c')
  const cc = process.env.CC || 'cc'
  let r = spawnSync(cc, ['-O2', '-static', '-o', out, src], { encoding: 'utf8' })
  if (r.status !== 0) r = spawnSync(cc, ['-O2', '-o', out, src], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`bench: cannot compile pauser.c: ${r.stderr}`)
  return { path: out, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

/** Starts `cmd args` in its own group; resolves with the child once it printed its first line. */
function startReady(cmd, args) {
  const c = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], detached: true })
  return new Promise((resolve, reject) => {
    let buf = ''
    const timer = setTimeout(() => reject(new Error(`bench: ${cmd} did not get ready`)), 60_000)
    c.stdout.on('data', (d) => {
      buf += d
      if (buf.includes('\n')) {
        clearTimeout(timer)
        resolve({ child: c, line: buf.split('\n')[0] })
      }
    })
    c.on('exit', () => reject(new Error(`bench: ${cmd} exited before it was ready`)))
  })
}

function killGroup(child) {
  if (child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, 'SIGKILL') // our unreaped child leads it: the group id is ours
    } catch {}
  }
}

/** N unrelated paused processes (one group, led by our child). */
async function herd(pauser, n) {
  if (n === 0) return { stop: () => {} }
  const { child } = await startReady(pauser, ['herd', String(n)])
  return { stop: () => killGroup(child) }
}

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout) || 100
function cpuMs(pid) {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ')
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK // utime + stime
}
const startTime = (pid) => {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return s.slice(s.lastIndexOf(')') + 2).split(' ')[19]
  } catch {
    return null
  }
}

/**
 * The wrapper's CPU (% of one core) over `windowMs` idle, then over `windowMs` of a `graceMs` grace
 * (an escaped helper ignoring SIGTERM keeps it waiting), with `unrelated` other processes running.
 */
export async function graceCpu(pauser, { unrelated, graceMs, windowMs }) {
  const load = await herd(pauser, unrelated)
  let w
  let helper = 0
  let helperStart = null
  try {
    const started = await startReady(SUPERVISOR, ['--grace', String(graceMs), '--', 'sh', '-c',
      `setsid ${pauser} ignore & echo $!; exec ${pauser}`])
    w = started.child
    helper = Number(started.line)
    helperStart = startTime(helper)
    await sleep(300)
    const idle0 = cpuMs(w.pid)
    await sleep(windowMs)
    const idle = cpuMs(w.pid) - idle0
    w.kill('SIGTERM')
    await sleep(200) // the stop itself (signals, one look at the tree) is not the grace's cost
    const grace0 = cpuMs(w.pid)
    await sleep(windowMs)
    const grace = cpuMs(w.pid) - grace0
    const exited = new Promise((r) => (w.exitCode !== null ? r() : w.once('exit', r)))
    await Promise.race([exited, sleep(graceMs + 10_000)])
    return { unrelated, graceMs, windowMs, idlePct: (100 * idle) / windowMs, gracePct: (100 * grace) / windowMs, helperGone: startTime(helper) !== helperStart || startTime(helper) === null }
  } finally {
    if (w) killGroup(w)
    if (helper > 0 && helperStart !== null && startTime(helper) === helperStart) {
      try {
        process.kill(helper, 'SIGKILL') // same pid, same start time: still the helper we started
      } catch {}
    }
    load.stop()
  }
}

/** Interleaved runs of the C floor and the wrapper stopping an n-process tree; ms per run. */
export async function treeStop(pauser, { n, runs, unrelated }) {
  const load = await herd(pauser, unrelated)
  const floor = []
  const wrapper = []
  try {
    for (let i = 0; i < runs; i++) {
      for (const [into, args] of [[floor, ['floor', String(n)]], [wrapper, ['wrapped', String(n), SUPERVISOR]]]) {
        const r = spawnSync(pauser, args, { encoding: 'utf8', timeout: 60_000 })
        if (r.status !== 0) throw new Error(`bench: pauser ${args[0]} failed: ${r.stderr}`)
        into.push(Number(r.stdout.trim()))
      }
    }
  } finally {
    load.stop()
  }
  return { n, runs, unrelated, floor, wrapper }
}

/** Everything, with the sizes for a full or a quick run. */
export async function wrapperStop(quick) {
  const pauser = buildPauser()
  try {
    const UNRELATED = quick ? 200 : 2000
    const grace = []
    for (const unrelated of [0, UNRELATED]) {
      grace.push(await graceCpu(pauser.path, quick ? { unrelated, graceMs: 1500, windowMs: 1000 } : { unrelated, graceMs: 9000, windowMs: 8000 }))
    }
    const tree = await treeStop(pauser.path, quick ? { n: 200, runs: 3, unrelated: UNRELATED } : { n: 1000, runs: 15, unrelated: UNRELATED })
    return { grace, tree }
  } finally {
    pauser.cleanup()
  }
}

/** The Markdown section for run.mjs's report. */
export function wrapperStopMarkdown({ grace, tree }) {
  const f = (v) => (v >= 10 ? v.toFixed(1) : v.toFixed(2))
  const fl = median(tree.floor)
  const wr = median(tree.wrapper)
  return `### Its stop path: CPU during the grace, and a ${tree.n}-process tree

CPU of the wrapper process (utime + stime from \`/proc\`, % of one core) over ${grace[0].windowMs / 1000} s idle, then over
${grace[0].windowMs / 1000} s of a ${grace[0].graceMs / 1000} s grace that an escaped (\`setsid\`) helper ignoring SIGTERM makes it wait
out, with unrelated paused processes on the machine (one run each: a sum over the window).

| unrelated processes | idle, % of a core | during the grace, % of a core | helper gone after the grace |
|---:|---:|---:|---|
${grace.map((g) => `| ${g.unrelated} | ${f(g.idlePct)} | ${f(g.gracePct)} | ${g.helperGone ? 'yes' : '**no**'} |`).join('\n')}

Stopping a ${tree.n}-process tree (a root, its children, their children; all paused) with ${tree.unrelated} unrelated
processes on the machine: SIGTERM to the wrapper → the wrapper has exited with every process gone,
beside the C floor (\`killpg(SIGTERM)\` and reaping until nothing is left, as a subreaper). Medians of
${tree.runs} interleaved runs.

| method | median ms | vs the floor |
|---|---:|---:|
| C floor: killpg + reap | ${f(fl)} | 1x |
| \`reapkit --\` (SIGTERM to the wrapper, until it exited) | ${f(wr)} | ${(wr / fl).toFixed(2)}x |
`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const quick = process.env.BENCH_QUICK === '1'
  const r = await wrapperStop(quick)
  console.log(wrapperStopMarkdown(r))
}
