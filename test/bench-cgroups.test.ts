// bench/cgroups.mjs: the bench run's own cgroup and its check that no bench leaves one behind (CI's
// quick bench left two empty wrapper cgroups: cli.mjs's resident-memory row and containers.mjs's
// host-kill row SIGKILLed `reapkit --`, which then cannot remove its own). A driver process (the
// check moves its process into a cgroup: never this worker) enters the bench's cgroup, runs real
// wrappers, and says what leftovers() found; the cgroups are real, and nothing is left after.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { cgroupRoot, noCgroup, removeCgroups } from './cgroup-lib'
import { ROOT } from './helpers'

const CGROUPS = join(ROOT, 'bench', 'cgroups.mjs')
const BIN = join(ROOT, 'bin', 'reapkit')

/** Runs `body` (ESM, with enterBenchCgroup, ownerTag, removeOwnedCgroups, spawn, BIN in scope) in a driver; its last stdout line, parsed. */
function driver(body: string): any {
  const script = `
    import { enterBenchCgroup, ownerTag, removeOwnedCgroups } from ${JSON.stringify(CGROUPS)}
    import { spawn } from 'node:child_process'
    const BIN = ${JSON.stringify(BIN)}
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
    const exited = (c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', r)))
    const started = (c) => new Promise((r) => c.stderr.on('data', (d) => String(d).includes('"event":"start"') && r()))
    const bench = enterBenchCgroup()
    const out = { path: bench.path, why: bench.why, pid: process.pid }
    try {
      ${body}
    } finally {
      bench.leave()
      console.log(JSON.stringify(out))
    }`
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 })
  expect(r.status, r.stderr).toBe(0)
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!)
}

describe.skipIf(noCgroup !== null)('bench/cgroups.mjs', () => {
  it('leftovers() names the cgroup of a wrapper SIGKILLed in the run and removes it; a wrapper ended by SIGTERM leaves none; the bench cgroup goes with leave()', async () => {
    const r = driver(`
      const w = spawn(BIN, ['--verbose', '--', 'sleep', '100'], { stdio: ['ignore', 'ignore', 'pipe'] })
      await started(w)
      w.kill('SIGTERM')
      await exited(w)
      out.afterTerm = await bench.leftovers()
      const k = spawn(BIN, ['--verbose', '--', 'sleep', '100'], { stdio: ['ignore', 'ignore', 'pipe'] })
      await started(k)
      out.killedPid = k.pid
      k.kill('SIGKILL')
      await exited(k)
      out.afterKill = await bench.leftovers({ waitMs: 1000 })
      out.afterRemoval = await bench.leftovers()`)
    try {
      expect(r.why).toBeNull()
      expect(r.path).toBe(join(cgroupRoot, `bench-${r.pid}`)) // right under the driver's own cgroup
      expect(r.afterTerm).toEqual([])
      expect(r.afterKill).toHaveLength(1)
      expect(r.afterKill[0]).toMatch(new RegExp(`^reapkit-.*_${r.killedPid}_\\d+_0_1 \\((empty|populated)\\)$`))
      expect(r.afterRemoval).toEqual([])
      expect(existsSync(r.path), 'the bench cgroup removed by leave()').toBe(false)
    } finally {
      await removeCgroups([r.path])
    }
  })

  it('removeOwnedCgroups removes the cgroups of a SIGKILLed wrapper by the owner read while it lived, and no other', async () => {
    const r = driver(`
      const a = spawn(BIN, ['--verbose', '--', 'sleep', '100'], { stdio: ['ignore', 'ignore', 'pipe'] })
      const b = spawn(BIN, ['--verbose', '--', 'sleep', '100'], { stdio: ['ignore', 'ignore', 'pipe'] })
      const tag = ownerTag(a.pid)
      await Promise.all([started(a), started(b)])
      a.kill('SIGKILL')
      b.kill('SIGKILL')
      await Promise.all([exited(a), exited(b)])
      out.removed = await removeOwnedCgroups(tag)
      out.left = await bench.leftovers({ waitMs: 1000 }) // b's only
      out.b = b.pid`)
    try {
      expect(r.removed).toBe(1)
      expect(r.left).toHaveLength(1)
      expect(r.left[0]).toContain(`_${r.b}_`)
    } finally {
      await removeCgroups([r.path])
    }
  })
})
