// What the exec helper (native/exec_helper.c) adds to a spawn on its own: child_process.spawn of
// `true` to its exit, beside the same through the helper (`reapkit-exec 0 0 0 -1 true true`: no
// group, no death signal, no report; its start and one more exec), interleaved in one run. Beside
// them, where this machine's `cc` links statically against glibc, the same sources linked that way
// (what the helper was before it was linked against musl: a static glibc program starts slower).
// Called by spawn-cost.mjs (spawnCostFigures); the helper beside the loaded addon is the one timed.
import { spawn as nodeSpawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const SOURCES = ['exec_helper.c', 'exec_pidns.c', 'exec_search.c'].map((f) => join(root, 'native', f))
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

/** The same helper sources linked statically against glibc by `cc`, or null (no cc, not glibc). */
function glibcBuild(dir) {
  const cc = process.env.CC || 'cc'
  if (!/glibc/i.test(spawnSync('getconf', ['GNU_LIBC_VERSION'], { encoding: 'utf8' }).stdout ?? '')) return null
  const out = join(dir, 'reapkit-exec-glibc')
  const r = spawnSync(cc, ['-O2', '-static', '-s', '-o', out, ...SOURCES], { stdio: 'ignore', timeout: 120_000 })
  return r.status === 0 ? out : null
}

function toExit(file, args) {
  const t0 = performance.now()
  const child = nodeSpawn(file, args, { stdio: 'ignore' })
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${file} exited ${code}`))))
  })
}

export async function helperStart(reapkit, n) {
  const shipped = reapkit.supervisorPath() ? join(dirname(reapkit.supervisorPath()), 'reapkit-exec') : null
  if (process.platform !== 'linux' || !shipped || !existsSync(shipped)) return { skipped: 'no exec helper beside the addon' }
  const dir = mkdtempSync(join(tmpdir(), 'reapkit-bench-helper-'))
  try {
    const glibc = glibcBuild(dir)
    const through = (helper) => () => toExit(helper, ['0', '0', '0', '-1', 'true', 'true'])
    const sides = [['direct', () => toExit('true', [])], ['shipped', through(shipped)], ...(glibc ? [['glibc', through(glibc)]] : [])]
    const times = Object.fromEntries(sides.map(([name]) => [name, []]))
    for (let i = 0; i < 10; i++) for (const [, run] of sides) await run() // warm-up
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < sides.length; j++) {
        const [name, run] = sides[(i + j) % sides.length] // the order rotated each round
        times[name].push(await run())
      }
    }
    return { n, medians: Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)])), glibc: glibc !== null }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export function helperStartMarkdown(h) {
  if (h.skipped) return `The exec helper's own start: not measured (${h.skipped}).\n`
  const m = h.medians
  const plus = (side) => `${m[side].toFixed(2)} ms (+${(m[side] - m.direct).toFixed(2)} ms)`
  return `The exec helper's own start (\`child_process.spawn\` to exit, median of ${h.n} each, interleaved): \`true\` alone ${m.direct.toFixed(2)} ms;
through the shipped helper ${plus('shipped')}${h.glibc ? `; through the same sources linked statically against glibc ${plus('glibc')}` : ''}.
`
}
