// The cost of reapkit's spawn(): N runs of `spawn('true')` to its exit, reapkit beside
// child_process.spawn, interleaved in the same run. Also: how often, right after spawn() returns,
// the child already leads its own group (/proc/PID/stat's pgrp == pid), and whether
// process.kill(-pid, 0) finds the group.
//   node bench/spawn-cost.mjs [N]      (after npm run build:ts)
import { spawn as nodeSpawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const reapkit = createRequire(import.meta.url)(join(here, '..', 'dist', 'cjs', 'index.js'))
const N = Number(process.argv[2] ?? 200)

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
const rows = { node: { returned: [], exited: [] }, reapkit: { returned: [], exited: [] } }
for (let i = 0; i < 10; i++) { await once(nodeSpawn); await once(reapkit.spawn) } // warm-up
for (let i = 0; i < N; i++) {
  for (const [name, fn] of [['node', nodeSpawn], ['reapkit', reapkit.spawn]]) {
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
const fmt = (x) => x.toFixed(2)
console.log(`spawn('true') x${N}, interleaved (ms)      median return  median exit  p95 exit`)
for (const [name, r] of Object.entries(rows)) {
  console.log(`  ${name.padEnd(36)} ${fmt(median(r.returned)).padStart(13)} ${fmt(median(r.exited)).padStart(12)} ${fmt(p95(r.exited)).padStart(9)}`)
}
console.log(`  reapkit - node (median exit)         ${fmt(median(rows.reapkit.exited) - median(rows.node.exited)).padStart(26)}`)
console.log(`group formed when spawn('sleep') returned: ${formed}/${N}; kill(-pid, 0) found it: ${killable}/${N}`)
