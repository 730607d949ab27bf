// The cost of reapkit's spawn(): N runs of `spawn('true')` to its exit, reapkit beside
// child_process.spawn, interleaved in the same run. Also: how often, right after spawn() returns,
// the child already leads its own group (/proc/PID/stat's pgrp == pid), and whether
// process.kill(-pid, 0) finds the group. Where a cgroup is ours (capabilities().cgroup), a third
// side: spawn({ cgroup: true }), which makes the child's cgroup, joins it in the exec helper and
// removes it at the exit (all inside "to exit"). Where a PID namespace can be made
// (capabilities().pidNamespace), two more: spawn({ pidNamespace: true }) (the exec helper outside,
// its init as PID 1, the command as PID 2) and the same guarantee through the native supervisor,
// reapkit's spawn of `reapkit-supervise --isolate -- true`.
// Called by run.mjs (spawnCostFigures, spawnCostMarkdown); also runs alone:
//   node bench/spawn-cost.mjs [N]      (after npm run build:ts)
import { spawn as nodeSpawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import os from 'node:os'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { helperStart, helperStartMarkdown } from './helper-start.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const reapkit = createRequire(import.meta.url)(process.env.REAPKIT_DIST ?? join(here, '..', 'dist', 'cjs', 'index.js')) // REAPKIT_DIST: another build, for a before/after

const pgrpOf = (pid) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2])
}
const exitOf = (child) => new Promise((res) => (child.exitCode !== null || child.signalCode !== null ? res() : child.once('exit', res)))

async function once(spawnFn) {
  const t0 = performance.now()
  const child = spawnFn('true', [], { stdio: 'ignore' })
  const returned = performance.now() - t0
  await exitOf(child)
  return { returned, exited: performance.now() - t0 }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const p95 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)]
const inCgroup = (file, args, options) => reapkit.spawn(file, args, { ...options, cgroup: true })
const inPidNamespace = (file, args, options) => reapkit.spawn(file, args, { ...options, pidNamespace: true })
const underIsolate = (file, args, options) => reapkit.spawn(reapkit.supervisorPath(), ['--isolate', '--', file, ...args], options)

/** Two turns of the event loop: work deferred from an exit (reapkit's look at the group, Node's 'close') is done. */
const settle = () => new Promise((res) => setImmediate(() => setImmediate(res)))

/**
 * This process's CPU (user + system, ms) over `k` sequential spawns of `true`, each to its exit.
 * Settled before the first reading and after the last exit, so that no chunk is charged with work
 * the previous chunk (the other side's) deferred, nor leaves its own to the next one.
 */
async function cpuOfChunk(spawnFn, k) {
  await settle()
  const c0 = process.cpuUsage()
  for (let i = 0; i < k; i++) await exitOf(spawnFn('true', [], { stdio: 'ignore' }))
  await settle()
  const c = process.cpuUsage(c0)
  return (c.user + c.system) / 1000 / k
}

/**
 * The parent's CPU per spawn (process.cpuUsage: this process's user + system time, its reaped
 * children's not counted), Node's and reapkit's, in chunks of 20 spawns interleaved (the order
 * alternated): the spawn call, the reap and everything reapkit does at the exit.
 */
async function cpuPerSpawn(N) {
  const chunk = 20
  const out = { node: [], reapkit: [], chunk }
  for (let i = 0; i < Math.max(10, Math.round(N / chunk)); i++) {
    const order = i % 2 ? [['node', nodeSpawn], ['reapkit', reapkit.spawn]] : [['reapkit', reapkit.spawn], ['node', nodeSpawn]]
    for (const [name, fn] of order) out[name].push(await cpuOfChunk(fn, chunk))
  }
  return out
}

/**
 * Starting `n` long-running children (`sleep 1000`, stand-ins for servers) in one synchronous loop,
 * Node's then reapkit's, then the other way round: the loop's wall time (ms). Each set is SIGKILLed
 * (by pid) and reaped before the next one starts.
 */
async function startsInALoop(n) {
  const out = { n, node: [], reapkit: [] }
  for (const order of [['node', 'reapkit'], ['reapkit', 'node']]) {
    for (const name of order) {
      const fn = name === 'node' ? nodeSpawn : reapkit.spawn
      const kids = []
      try {
        const t0 = performance.now()
        for (let i = 0; i < n; i++) kids.push(fn('sleep', ['1000'], { stdio: 'ignore' }))
        out[name].push(performance.now() - t0)
      } finally {
        for (const k of kids) k.kill('SIGKILL')
        await Promise.all(kids.map(exitOf))
      }
    }
  }
  return out
}

/** Cores and the 1-minute load average at the start and now, as the other benches stamp them. */
function machineStamp(load0) {
  return `${os.cpus().length} cores; 1-minute load average ${load0.toFixed(1)} at the start, ${os.loadavg()[0].toFixed(1)} at the end`
}

export async function spawnCostFigures(N = 200) {
  const load0 = os.loadavg()[0]
  const rows = { node: { returned: [], exited: [] }, reapkit: { returned: [], exited: [] } }
  const sides = [['node', nodeSpawn], ['reapkit', reapkit.spawn]]
  const cgroup = reapkit.capabilities().cgroup
  if (cgroup.available) {
    rows.cgroup = { returned: [], exited: [] }
    sides.push(['cgroup', inCgroup])
  }
  const pidns = reapkit.capabilities().pidNamespace
  if (pidns.available) {
    rows.pidns = { returned: [], exited: [] }
    sides.push(['pidns', inPidNamespace])
    if (reapkit.capabilities().supervisor) {
      rows.isolate = { returned: [], exited: [] }
      sides.push(['isolate', underIsolate])
    }
  }
  for (let i = 0; i < 10; i++) for (const [, fn] of sides) await once(fn) // warm-up
  for (let i = 0; i < N; i++) {
    // The order rotated each round: no side always runs first (or right after a given other).
    for (let j = 0; j < sides.length; j++) {
      const [name, fn] = sides[(i + j) % sides.length]
      const r = await once(fn)
      rows[name].returned.push(r.returned)
      rows[name].exited.push(r.exited)
    }
  }
  const cpu = await cpuPerSpawn(N)
  const starts = await startsInALoop(N >= 200 ? 2000 : 500)
  const helper = await helperStart(reapkit, N)
  let formed = 0
  let killable = 0
  for (let i = 0; i < N; i++) {
    const child = reapkit.spawn('sleep', ['5'], { stdio: 'ignore' })
    if (pgrpOf(child.pid) === child.pid) formed++
    try {
      process.kill(-child.pid, 0)
      killable++
    } catch {}
    child.kill('SIGKILL')
    await exitOf(child)
  }
  return { n: N, rows, cpu, starts, helper, machine: machineStamp(load0), formed, killable, cgroupReason: cgroup.available ? null : cgroup.reason, pidnsReason: pidns.available ? null : pidns.reason }
}

const fmt = (x) => x.toFixed(2)

const sum = (xs) => xs.reduce((a, b) => a + b, 0)

export function spawnCostMarkdown(d) {
  const m = (side, key) => median(d.rows[side][key])
  const x = (a, b) => `${(a / b).toFixed(2)}x`
  const ratioRows = `| reapkit / Node: to exit (median) | ${x(m('reapkit', 'exited'), m('node', 'exited'))} | ≤ 1.25x |
| reapkit / Node: the \`spawn()\` call, event loop held (median ms to return) | ${x(m('reapkit', 'returned'), m('node', 'returned'))} | ≤ 1.25x |
| reapkit / Node: parent CPU per spawn (median of ${d.cpu.node.length} chunks of ${d.cpu.chunk}: ${fmt(median(d.cpu.reapkit))} / ${fmt(median(d.cpu.node))} ms) | ${x(median(d.cpu.reapkit), median(d.cpu.node))} | ≤ 1.25x |
| reapkit / Node: ${d.starts.n.toLocaleString('en-US')} \`sleep\` starts in one loop (sum of 2 rounds each: ${(sum(d.starts.reapkit) / 2000).toFixed(2)} / ${(sum(d.starts.node) / 2000).toFixed(2)} s a round) | ${x(sum(d.starts.reapkit), sum(d.starts.node))} | ≤ 1.25x |
`
  const row = (side, name) => `| ${name} | ${fmt(m(side, 'returned'))} | ${fmt(m(side, 'exited'))} | ${fmt(p95(d.rows[side].exited))} |\n`
  const ratio = (a, b, name) => `| ${name} (median to exit) | | ${(m(a, 'exited') / m(b, 'exited')).toFixed(2)}x | |\n`
  return `## \`spawn\`: what reapkit's costs beside Node's

\`spawn('true')\` to its exit, ${d.n} runs each, reapkit's and \`child_process.spawn\` interleaved in this run. reapkit's
returns once the exec helper has formed the group, armed the death signal and exec'd the target.

| spawn | median ms to return | median ms to exit | p95 ms to exit |
|---|---:|---:|---:|
${row('node', '`child_process.spawn`')}${row('reapkit', 'reapkit `spawn`')}${ratio('reapkit', 'node', 'reapkit / Node')}${d.rows.cgroup ? row('cgroup', 'reapkit `spawn({ cgroup: true })`') + ratio('cgroup', 'reapkit', 'cgroup / reapkit') : ''}${d.rows.pidns ? row('pidns', 'reapkit `spawn({ pidNamespace: true })`') + ratio('pidns', 'reapkit', 'pidNamespace / reapkit') : ''}${d.rows.isolate ? row('isolate', 'reapkit `spawn` of `reapkit-supervise --isolate -- true`') + ratio('isolate', 'pidns', '--isolate / pidNamespace') : ''}
${d.rows.cgroup ? `With \`cgroup: true\`, "to exit" includes making the child's cgroup (mkdir), the helper's join (a write to its
\`cgroup.procs\`) and its removal (rmdir) at the exit.` : `No \`cgroup: true\` row: ${d.cgroupReason}.`}

${d.rows.pidns ? `\`pidNamespace: true\` and \`--isolate\` give the same guarantee: the whole tree ends when this process dies, SIGKILL
included (the kernel kills a PID namespace whose init dies). "To exit" includes the namespace and its own /proc mount
being made and torn down (the kernel completes the teardown before the helper, or the supervisor, sees its init exit).
With \`--isolate\`, spawn returns once the supervisor runs, before the command does.` : `No PID namespace rows: ${d.pidnsReason}.`}

Beside Node's, in this run (${d.machine}):

| ratio | this run | goal |
|---|---:|---:|
${ratioRows}
The floor under the \`spawn()\` call's ratio: Node's spawn returns once libuv has seen the exec helper's exec; reapkit's
then waits (one bounded poll) for the helper's report, i.e. for the target's own exec, so a second exec is inside the
call. Parent CPU is \`process.cpuUsage()\` over each chunk (user + system, this process only), the reap and reapkit's
look at the exit included.

${helperStartMarkdown(d.helper)}
Right after \`spawn('sleep')\` returned, the child led its own group in ${d.formed} of ${d.n} spawns; \`kill(-pid, 0)\` found it in ${d.killable} of ${d.n}.
`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const d = await spawnCostFigures(Number(process.argv[2] ?? 200))
  console.log(spawnCostMarkdown(d))
}
