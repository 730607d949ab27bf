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
const inPidNamespace = (file, args, options) => reapkit.spawn(file, args, { ...options, pidNamespace: true })
const underIsolate = (file, args, options) => reapkit.spawn(reapkit.supervisorPath(), ['--isolate', '--', file, ...args], options)

export async function spawnCostFigures(N = 200) {
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
  return { n: N, rows, formed, killable, cgroupReason: cgroup.available ? null : cgroup.reason, pidnsReason: pidns.available ? null : pidns.reason }
}

const fmt = (x) => x.toFixed(2)

export function spawnCostMarkdown(d) {
  const m = (side, key) => median(d.rows[side][key])
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

Right after \`spawn('sleep')\` returned, the child led its own group in ${d.formed} of ${d.n} spawns; \`kill(-pid, 0)\` found it in ${d.killable} of ${d.n}.
`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const d = await spawnCostFigures(Number(process.argv[2] ?? 200))
  console.log(spawnCostMarkdown(d))
}
