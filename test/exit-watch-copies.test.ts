// Two copies of reapkit's JavaScript in one process share the addon's one exit watcher: the second
// copy's first watch used to fail with EBUSY (exit_watch_start), as the leak guard's copy (dist/)
// and the tests' (lib/) did when the guard had watched a process first.
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from './helpers'

describe.skipIf(process.platform !== 'linux')('two copies of the module in one process', () => {
  it('both learn of their children\'s exits by kernel event, whichever copy started the watcher', () => {
    const run = spawnSync(process.execPath, [join(__dirname, 'fixtures', 'two-copies.cjs'), join(ROOT, 'dist', 'cjs')], {
      encoding: 'utf8',
      timeout: 20_000,
    })
    expect(run.stderr).toBe('')
    const out = JSON.parse(run.stdout.trim())
    expect(out.distinct).toBe(true)
    // Each settles by its exit (before: the second copy's first watch failed with EBUSY). The code is
    // 0 when the watcher read the status before Node's own child handling reaped it, else unknown.
    expect(out.results).toHaveLength(3)
    for (const r of out.results) expect(r).toEqual({ ok: true, code: r.code === null ? null : 0 })
  })
})
