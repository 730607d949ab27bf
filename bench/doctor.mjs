// `reapkit doctor` figures (issue 10), in a private PID namespace so that the whole process table is
// the bench's: one listing among N unrelated processes (wall and CPU), and found / missed / false
// positives on the doctor test's scenario, against `pgrep -f "mcp|npx"` in the same run.
// Called by run.mjs. Needs root and `unshare` (else returns null), and a C compiler for the load.
import { spawn, spawnSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const DIST = join(here, '..', 'dist', 'cjs', 'index.js')

export async function doctorFigures(n, runs) {
  if (process.platform !== 'linux' || spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true'], { stdio: 'ignore' }).status !== 0) return null
  const ns = spawn('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, join(here, 'fixtures', 'doctor-bench.cjs'), String(n), String(runs)], {
    stdio: ['ignore', 'pipe', 'inherit'], detached: true, env: { ...process.env, REAPKIT_DIST: DIST },
  })
  let buf = ''
  ns.stdout.setEncoding('utf8')
  ns.stdout.on('data', (d) => (buf += d))
  const timer = setTimeout(() => { try { process.kill(-ns.pid, 'SIGKILL') } catch {} }, 300_000)
  await new Promise((r) => ns.once('exit', r))
  clearTimeout(timer)
  const line = buf.split('\n').find((l) => l.startsWith('{'))
  const r = line ? JSON.parse(line) : { event: 'error', reason: 'no output' }
  if (r.event !== 'result') throw new Error(`doctor bench: ${r.reason}`)
  return r
}
