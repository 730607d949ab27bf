// The Supervisor's exit backstop over N children, contained (spawn({ cgroup: true }): one
// cgroup.kill each, then one shared bounded wait for them all to empty and their removal) beside
// uncontained (one killpg each), in the same run: how long process 'exit' takes in the host.
//   node bench/backstop-cgroup.mjs [N] [runs]   prints the table alone
import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const DIST = join(here, '..', 'dist', 'cjs', 'index.js')
const require = createRequire(import.meta.url)

/** One host: N children (contained or not) under a Supervisor, then process.exit; resolves to the ms its exit handlers took. */
function hostExit(n, cgroup) {
  const script = `const r = require(${JSON.stringify(DIST)})
const sup = new r.Supervisor()
for (let i = 0; i < ${n}; i++) sup.adopt(r.spawn('sleep', ['300'], { cgroup: ${cgroup}, stdio: 'ignore' }))
setTimeout(() => {
  let t0
  process.prependListener('exit', () => { t0 = performance.now() })
  process.on('exit', () => { require('fs').writeSync(1, String(performance.now() - t0) + '\\n') })
  process.exit(0)
}, 300)`
  const host = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  host.stdout.on('data', (d) => (out += d))
  return new Promise((resolve, reject) => {
    host.once('exit', () => (/^[\d.]+\n$/.test(out) ? resolve({ ms: Number(out), pid: host.pid }) : reject(new Error(`host said ${JSON.stringify(out)}`))))
  })
}

const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]

/** Both sides, interleaved, `runs` times each; null where no cgroup is ours to make (the reason). */
export async function backstopFigures(n = 100, runs = 5) {
  const cap = require(DIST).capabilities().cgroup
  if (!cap.available) return { n, runs, reason: cap.reason, contained: [], plain: [] }
  const contained = []
  const plain = []
  let left = 0
  for (let i = 0; i < runs; i++) {
    const c = await hostExit(n, true)
    contained.push(c.ms)
    // Its cgroups not removed within the bounded wait (named for their host: cgroup/make.ts).
    left += readdirSync(cap.path).filter((name) => name.startsWith('reapkit-') && name.split('_')[3] === String(c.pid)).length
    plain.push((await hostExit(n, false)).ms)
  }
  return { n, runs, reason: null, contained, plain, left }
}

export function backstopMarkdown(d) {
  if (d.reason) return `## The exit backstop over contained children\n\nNot measured: ${d.reason}.\n`
  const fmt = (x) => x.toFixed(1)
  return `## The exit backstop over contained children

A host with ${d.n} \`sleep\` children under a Supervisor calls \`process.exit\`: how long its 'exit' handlers take (the
backstop's), median of ${d.runs} runs each, interleaved in this run.

| children | median ms | max ms |
|---|---:|---:|
| ${d.n} in a group each (one killpg each) | ${fmt(median(d.plain))} | ${fmt(Math.max(...d.plain))} |
| ${d.n} with \`cgroup: true\` (every \`cgroup.kill\`, then one wait for all, at most 100 ms, and the removals) | ${fmt(median(d.contained))} | ${fmt(Math.max(...d.contained))} |

Cgroups left behind (not empty within the wait) over the ${d.runs} contained runs: ${d.left}.
`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(backstopMarkdown(await backstopFigures(Number(process.argv[2] ?? 100), Number(process.argv[3] ?? 5))))
}
