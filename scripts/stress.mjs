// npm run test:stress: the whole suite with every core kept busy, STRESS_RUNS times in a row
// (default 5). Shared machines are loaded on a normal day; a test that fails here is a bug.
// The busy loops are started with reapkit's own spawn: they die with this script, by the kernel's
// death signal, even if it is killed.
import { spawn as spawnPlain } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { spawn } = require('../dist/cjs/index.js')

const runs = Number(process.env.STRESS_RUNS ?? 5)
if (!Number.isInteger(runs) || runs < 1) throw new RangeError(`STRESS_RUNS must be a positive integer, not ${process.env.STRESS_RUNS}`)
const loads = Number(process.env.STRESS_LOADS ?? availableParallelism())
const args = process.argv.slice(2) // passed to vitest, e.g. a test file

const busy = Array.from({ length: loads }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }))
const stopLoads = () => busy.forEach((b) => b.kill('SIGKILL'))
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => (stopLoads(), process.exit(130)))

let failed = 0
try {
  for (let i = 1; i <= runs; i++) {
    const started = Date.now()
    console.log(`== stress run ${i}/${runs}, ${loads} busy loops`)
    // Not spawnSync: this process must stay able to handle SIGINT/SIGTERM (and stop the loads) meanwhile.
    const vitest = spawnPlain('npx', ['vitest', 'run', ...args], { stdio: 'inherit' })
    const r = await new Promise((resolve) => vitest.once('exit', (status, signal) => resolve({ status, signal })))
    console.log(`== stress run ${i}/${runs}: ${r.status === 0 ? 'passed' : `FAILED (status ${r.status}, signal ${r.signal})`} in ${((Date.now() - started) / 1000).toFixed(0)} s`)
    if (r.status !== 0) {
      failed = i
      break
    }
  }
} finally {
  stopLoads()
}
console.log(failed ? `== stress: run ${failed} failed` : `== stress: ${runs} of ${runs} runs passed`)
process.exitCode = failed ? 1 : 0
