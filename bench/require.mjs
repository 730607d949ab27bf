// npm run bench's require rows (issue 29 item 6, issue 32 item 1): what loading reapkit costs a
// fresh process, beside floors measured the same way in the same run, one sample of each in turn:
// - `require` of a one-line file: the loader's own first-require cost, which every package pays;
// - the same, then node:child_process: what any spawn wrapper that holds Node's own spawn pays.
//   reapkit takes it at require (lib/mechanisms/node-spawn.ts), so that
//   `child_process.spawn = reapkit.spawn` cannot make its spawn call itself;
// - require('reapkit') and its first call into the addon (kill(own pid, 0)): the addon loads on
//   first use (lib/ground/native.ts), so this row shows what the require row no longer pays;
// - `import` of reapkit (the ESM entry, dist/esm/index.mjs, which takes the CommonJS index.js with
//   createRequire and reads every export: none loads a part) beside `import` of a one-line module
//   (the ESM loader's own start-up, which any `import` pays first).
// The verdict: require('reapkit') under 5 ms at the median (the goal is 4, with margin), and each
// row's ratio to its own floor, so that a loaded machine, which slows every row, shows as such.
// Called by run.mjs; also runs alone: `node bench/require.mjs` (BENCH_QUICK=1: 10 samples of each;
// REQUIRE_N=n sets it; REAPKIT_DIST=/path/to/dist/cjs/index.js measures another build).
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
export const TARGET_MS = 5

/** One fresh process: the time of `load` alone (after `before`, untimed), in ms. */
function sample(before, load) {
  const script = `${before}; const t = performance.now(); ${load}; console.log(performance.now() - t)`
  // -e runs as CommonJS; the ESM rows time an awaited import() in it.
  const r = spawnSync(process.execPath, ['-e', `(async () => { ${script} })()`], { encoding: 'utf8', timeout: 15_000 })
  const ms = Number(r.stdout.trim())
  if (r.status !== 0 || !Number.isFinite(ms)) throw new Error(`bench require: ${load} failed (status ${r.status}, signal ${r.signal}): ${r.stderr.trim()}`)
  return ms
}

/** Samples of each row, interleaved: `n` fresh processes per row. */
export function requireFigures(n, dist = process.env.REAPKIT_DIST ?? join(here, '..', 'dist', 'cjs', 'index.js')) {
  const dir = mkdtempSync(join(os.tmpdir(), 'reapkit-require-'))
  try {
    const trivial = join(dir, 'one-line.js')
    const trivialEsm = join(dir, 'one-line.mjs')
    writeFileSync(trivial, 'module.exports = 1\n')
    writeFileSync(trivialEsm, 'export default 1\n')
    const esm = join(dirname(dist), '..', 'esm', 'index.mjs')
    const rows = {
      floor: () => sample('', `require(${JSON.stringify(trivial)})`),
      childProcess: () => sample('', `require(${JSON.stringify(trivial)}); require('node:child_process')`),
      reapkit: () => sample('', `require(${JSON.stringify(dist)})`),
      reapkitAddon: () => sample('', `require(${JSON.stringify(dist)}).kill(process.pid, 0, { allowSelf: true })`),
      importFloor: () => sample('', `await import(${JSON.stringify(pathToFileURL(trivialEsm).href)})`),
      importReapkit: () => sample('', `await import(${JSON.stringify(pathToFileURL(esm).href)})`),
    }
    const samples = Object.fromEntries(Object.keys(rows).map((k) => [k, []]))
    for (let i = 0; i < n; i++) for (const [k, run] of Object.entries(rows)) samples[k].push(run())
    return samples
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function pct(values, p) {
  const s = [...values].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]
}
const fmt = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(3))

/** The Markdown section for latest.md: each row with its floor, p50 and p90 ratios to that floor. */
export function requireMarkdown(s) {
  const ratio = (v, floor) => `${(pct(v, 50) / pct(floor, 50)).toFixed(2)}x`
  const row = (what, v, floor) => `| ${what} | ${v.length} | ${fmt(pct(v, 50))} | ${fmt(pct(v, 90))} | ${fmt(pct(v, 99))} | ${floor ? ratio(v, floor) : ''} |`
  const r = pct(s.reapkit, 50)
  const lines = [
    '| what | n | p50 ms | p90 ms | p99 ms | p50 / its floor\'s |',
    '|---|---:|---:|---:|---:|---:|',
    row("`require('reapkit')`", s.reapkit, s.floor),
    row("`import` of reapkit (ESM)", s.importReapkit, s.importFloor),
    row('`require` of a one-line file (the loader\'s own cost, paid by any package): the floor of `require`', s.floor),
    row('`import` of a one-line module (the ESM loader\'s start-up, paid by any `import`): the floor of `import`', s.importFloor),
    row('the one-line file, then `node:child_process` (what holding Node\'s own `spawn` costs)', s.childProcess, s.floor),
    row("`require('reapkit')`, then its first call into the addon (`kill(pid, 0)`: the addon loads on first use)", s.reapkitAddon, s.floor),
    '',
    `Target < ${TARGET_MS} ms → ${r < TARGET_MS ? 'met' : 'NOT met'} (p50 ${fmt(r)} ms). Above the one-line floor: ${fmt(r - pct(s.floor, 50))} ms; ` +
      `above the floor with \`node:child_process\`: ${fmt(r - pct(s.childProcess, 50))} ms (reapkit's own code; the addon loads on first use, ` +
      `${fmt(pct(s.reapkitAddon, 50) - r)} ms more). \`import\` of reapkit above the \`import\` floor: ${fmt(pct(s.importReapkit, 50) - pct(s.importFloor, 50))} ms.`,
  ]
  return lines.join('\n')
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const n = Number(process.env.REQUIRE_N) || (process.env.BENCH_QUICK === '1' ? 10 : 30)
  const loadAtStart = os.loadavg()[0]
  const s = requireFigures(n)
  console.log(requireMarkdown(s))
  console.log(`\n(load average ${loadAtStart.toFixed(2)} → ${os.loadavg()[0].toFixed(2)})`)
  if (process.env.BENCH_JSON) console.log(JSON.stringify(s))
}
