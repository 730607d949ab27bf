// reapkit's spawn swapped in for Node's (issue 32 item 1). `child_process.spawn = reapkit.spawn` (a
// preload, a test setup, a tool that patches Node) made every spawn throw "Maximum call stack size
// exceeded": reapkit's spawn looked child_process.spawn up when called, found itself, and left the
// report pipes of every round open. reapkit now holds Node's own spawn from the moment it loads
// (lib/mechanisms/node-spawn.ts). Each way of patching runs in a fresh Node (test/fixtures/
// spawn-patched.*), and every child must come out with reapkit's guarantees: its own process group
// (read from /proc), the death signal armed, the start-up confirmed, and no descriptor left open.
import { spawnSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { DIST, FIXTURES } from './helpers'

const linux = process.platform === 'linux'

interface Run {
  pid: number
  pgrp: number | null
  pgid: number | null
  deathSignal: string | null
  startup?: string | null
  code: number | null
}

function runFixture(file: string, args: string[]): { runs?: Run[]; fdsBefore?: number; fdsAfter?: number; wrapped?: number; namedIsReapkit?: boolean; childProcessBefore?: boolean; error?: string } {
  const r = spawnSync(process.execPath, [join(FIXTURES, file), ...args], { encoding: 'utf8', timeout: 60_000 })
  const last = r.stdout.trim().split('\n').pop()
  expect(last, `no report (status ${r.status}, signal ${r.signal}): ${r.stderr}`).toBeTruthy()
  return JSON.parse(last!)
}

function expectGuarantees(runs: Run[]): void {
  for (const run of runs) {
    expect(run.pgrp, `pid ${run.pid}: its own group, read from /proc`).toBe(run.pid)
    expect(run.pgid).toBe(run.pid)
    expect(run.deathSignal).toBe('SIGKILL')
    if (run.startup !== undefined) expect(run.startup).toBe('exec')
    expect(run.code).toBe(0)
  }
}

describe.runIf(linux)('child_process.spawn = reapkit.spawn', () => {
  it('spawns through the patched module with reapkit\'s guarantees, without recursion or leaked descriptors', () => {
    const r = runFixture('spawn-patched.cjs', [DIST, 'direct'])
    expect(r.error).toBeUndefined()
    expect(r.runs).toHaveLength(20)
    expectGuarantees(r.runs!)
    expect(r.fdsAfter).toBe(r.fdsBefore)
  })

  it('also when reapkit loaded before anything loaded node:child_process (then loaded and patched)', () => {
    const r = runFixture('spawn-patched.cjs', [DIST, 'first'])
    expect(r.error).toBeUndefined()
    expect(r.childProcessBefore).toBe(false)
    expect(r.runs).toHaveLength(20)
    expectGuarantees(r.runs!)
    expect(r.fdsAfter).toBe(r.fdsBefore)
  })

  it('also behind a wrapper that reads reapkit.spawn only when called, after the patch', () => {
    const r = runFixture('spawn-patched.cjs', [DIST, 'wrapper'])
    expect(r.error).toBeUndefined()
    expectGuarantees(r.runs!)
    expect(r.fdsAfter).toBe(r.fdsBefore)
  })

  it('keeps using a wrapper installed before reapkit loaded (what child_process.spawn was then)', () => {
    const r = runFixture('spawn-patched.cjs', [DIST, 'before'])
    expect(r.error).toBeUndefined()
    expectGuarantees(r.runs!)
    // The warm-up spawn and the 20 after it, each through the wrapper, each once.
    expect(r.wrapped).toBe(21)
  })

  it('sees a wrapper (a spy) installed after reapkit loaded, and Node\'s spawn again once it is taken out', () => {
    const r = runFixture('spawn-patched.cjs', [DIST, 'after'])
    expect(r.error).toBeUndefined()
    expect(r.runs).toHaveLength(60)
    expectGuarantees(r.runs!)
    // Only the 20 spawns made while the wrapper was in: none before, none after it was restored.
    expect(r.wrapped).toBe(20)
    expect(r.fdsAfter).toBe(r.fdsBefore)
  })

  it('ESM: the default export patched and the named exports synced (syncBuiltinESMExports)', () => {
    const r = runFixture('spawn-patched.mjs', [join(dirname(DIST), '..', 'esm', 'index.mjs')])
    expect(r.error).toBeUndefined()
    expect(r.namedIsReapkit).toBe(true)
    expect(r.runs).toHaveLength(2)
    expectGuarantees(r.runs!)
  })
})
