// The cost of reapkit's spawn(): N runs of `spawn('true')` to its exit, reapkit beside
// child_process.spawn, interleaved in the same run. Also: how often, right after spawn() returns,
// the child already leads its own group (/proc/PID/stat's pgrp == pid), and whether
// process.kill(-pid, 0) finds the group. Where a cgroup is ours (capabilities().cgroup), a third
// side: spawn({ cgroup: true }), which makes the child's cgroup, joins it in the exec helper and
// removes it at the exit (all inside "to exit").
// Called by run.mjs (spawnCostFigures, spawnCostMarkdown); also runs alone:
//   node bench/spawn-cost.mjs [N]      (after npm run build:ts)
import { spawn as nodeSpawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const reapkit = createRequire(import.meta.url)(join(here, '..', 'dist', 'cjs', 'index.js'))

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

export async function spawnCostFigures(N = 200) {
  const rows = { node: { returned: [], exited: [] }, reapkit: { returned: [], exited: [] } }
  const sides = [['node', nodeSpawn], ['reapkit', reapkit.spawn]]
  const cgroup = reapkit.capabilities().cgroup
  if (cgroup.available) {
    rows.cgroup = { returned: [], exited: [] }
    sides.push(['cgroup', inCgroup])
  }
  for (let i = 0; i < 10; i++) for (const [, fn] of sides) await once(fn) // warm-up
  for (let i = 0; i < N; i++) {
    for (const [name, fn] of sides) {
      const r = await once(fn)
      rows[name].returned.push(r.returned)
      rows[name].exited.push(r.exited)
    }
  }
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
  return { n: N, rows, formed, killable, cgroupReason: cgroup.available ? null : cgroup.reason }
}

const fmt = (x) => x.toFixed(2)

export function spawnCostMarkdown(d) {
  const m = (side, key) => median(d.rows[side][key])
  return `## \`spawn\`: what reapkit's costs beside Node's

\`spawn('true')\` to its exit, ${d.n} runs each, reapkit's and \`child_process.spawn\` interleaved in this run. reapkit's
returns once the exec helper has formed the group, armed the death signal and exec'd the target.

| spawn | median ms to return | median ms to exit | p95 ms to exit |
|---|---:|---:|---:|
| \`child_process.spawn\` | ${fmt(m('node', 'returned'))} | ${fmt(m('node', 'exited'))} | ${fmt(p95(d.rows.node.exited))} |
| reapkit \`spawn\` | ${fmt(m('reapkit', 'returned'))} | ${fmt(m('reapkit', 'exited'))} | ${fmt(p95(d.rows.reapkit.exited))} |
| reapkit / Node (median to exit) | | ${(m('reapkit', 'exited') / m('node', 'exited')).toFixed(2)}x | |
${d.rows.cgroup ? `| reapkit \`spawn({ cgroup: true })\` | ${fmt(m('cgroup', 'returned'))} | ${fmt(m('cgroup', 'exited'))} | ${fmt(p95(d.rows.cgroup.exited))} |
| cgroup / reapkit (median to exit) | | ${(m('cgroup', 'exited') / m('reapkit', 'exited')).toFixed(2)}x | |
` : ''}
${d.rows.cgroup ? `With \`cgroup: true\`, "to exit" includes making the child's cgroup (mkdir), the helper's join (a write to its
\`cgroup.procs\`) and its removal (rmdir) at the exit.` : `No \`cgroup: true\` row: ${d.cgroupReason}.`}

Right after \`spawn('sleep')\` returned, the child led its own group in ${d.formed} of ${d.n} spawns; \`kill(-pid, 0)\` found it in ${d.killable} of ${d.n}.
`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const d = await spawnCostFigures(Number(process.argv[2] ?? 200))
  console.log(spawnCostMarkdown(d))
}
