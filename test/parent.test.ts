import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { capabilities, getParentDeathSignal, setParentDeathSignal, watchParent } from '../lib/index'
import { ROOT, isGone, jsonLines, spawnFixture, waitFor } from './helpers'

const linux = process.platform === 'linux'

/** Starts intermediate -> watcher; returns the watcher's JSON lines and the intermediate. */
async function startChain(mode: string, deathSignal: string, env: NodeJS.ProcessEnv = {}) {
  const intermediate = spawnFixture('parent-death.cjs', [mode, deathSignal], { env })
  const out = jsonLines(intermediate.stdout!)
  const info = await out.next((m) => m.event === 'intermediate', 15_000, 'the intermediate to start')
  return { intermediate, out, info }
}

describe.runIf(linux)('watchParent on Linux', () => {
  it('SIGKILL of the intermediate: the watching grandchild gets onExit and its death signal', async () => {
    const { intermediate, out, info } = await startChain('intermediate', 'SIGUSR2')
    const ready = await out.next((m) => m.event === 'ready', 15_000, 'the watcher to arm')
    expect(ready).toMatchObject({ parentPid: info.pid, mechanism: 'pdeathsig', deathSignal: 'SIGUSR2', armed: 'SIGUSR2' })
    intermediate.kill('SIGKILL')
    const onExit = await out.next((m) => m.event === 'onExit', 10_000, 'onExit')
    const signal = await out.next((m) => m.event === 'signal', 10_000, 'the death signal')
    expect(onExit.info).toMatchObject({ parentPid: info.pid, mechanism: 'pdeathsig' })
    expect(onExit.info.newParentPid).not.toBe(info.pid)
    expect(signal.signal).toBe('SIGUSR2')
    expect(out.seen.filter((m) => m.event === 'onExit')).toHaveLength(1) // exactly once
  })

  it("deathSignal: 'SIGTERM' arms it; deathSignal: false watches by pidfd without arming anything", async () => {
    const a = await startChain('intermediate', 'SIGTERM')
    expect(await a.out.next((m) => m.event === 'ready')).toMatchObject({ mechanism: 'pdeathsig', armed: 'SIGTERM' })
    a.intermediate.kill('SIGKILL')
    await a.out.next((m) => m.event === 'signal' && m.signal === 'SIGTERM', 10_000, 'SIGTERM')
    await a.out.next((m) => m.event === 'onExit', 10_000, 'onExit')

    const b = await startChain('intermediate', 'none')
    expect(await b.out.next((m) => m.event === 'ready')).toMatchObject({ mechanism: 'pidfd', deathSignal: null, armed: null })
    b.intermediate.kill('SIGKILL')
    expect((await b.out.next((m) => m.event === 'onExit', 10_000, 'onExit')).info.mechanism).toBe('pidfd')
  })

  it('watchParent({ onExit }) alone calls onExit: nothing is armed, the process is not killed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'reapkit-parent-'))
    try {
      const marker = join(dir, 'marker')
      const { intermediate, out } = await startChain('intermediate', 'default', { MARKER: marker })
      const ready = await out.next((m) => m.event === 'ready', 15_000, 'the watcher to start')
      expect(ready).toMatchObject({ mechanism: 'pidfd', deathSignal: null, armed: null })
      intermediate.kill('SIGKILL')
      const onExit = await out.next((m) => m.event === 'onExit', 10_000, 'onExit')
      expect(onExit.info.mechanism).toBe('pidfd')
      expect(JSON.parse(readFileSync(marker, 'utf8'))).toMatchObject({ parentPid: ready.parentPid })
      // It ends on its own (exit 0 after onExit) rather than by a signal: wait until it is gone.
      await waitFor(() => isGone(ready.pid), 10_000, 'the watcher to exit')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("deathSignal: 'SIGTERM' with no handler: the old default, the process dies before onExit", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'reapkit-parent-'))
    try {
      const marker = join(dir, 'marker')
      const { intermediate, out } = await startChain('intermediate', 'SIGTERM!', { MARKER: marker })
      const ready = await out.next((m) => m.event === 'ready', 15_000, 'the watcher to start')
      expect(ready).toMatchObject({ mechanism: 'pdeathsig', deathSignal: 'SIGTERM', armed: 'SIGTERM' })
      intermediate.kill('SIGKILL')
      await waitFor(() => isGone(ready.pid), 10_000, 'the watcher to be killed')
      expect(existsSync(marker)).toBe(false)
      expect(out.seen.some((m) => m.event === 'onExit')).toBe(false)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('the race: the parent is already gone when watching starts, so it fires at once', async () => {
    const { out, info } = await startChain('intermediate-exit', 'SIGUSR2')
    const ready = await out.next((m) => m.event === 'ready', 15_000, 'the watcher to start')
    expect(ready.parentPid).toBe(info.pid)
    const onExit = await out.next((m) => m.event === 'onExit', 10_000, 'onExit')
    expect(onExit.info.parentPid).toBe(info.pid)
    expect(onExit.info.newParentPid).not.toBe(info.pid)
  })

  it("close() disarms: the newest remaining watcher's signal, then what was armed before", () => {
    const before = getParentDeathSignal()
    try {
      setParentDeathSignal('SIGHUP')
      const w1 = watchParent({ deathSignal: 'SIGUSR2' })
      const w2 = watchParent({ deathSignal: 'SIGTERM' })
      const w3 = watchParent({ deathSignal: 'SIGWINCH' })
      expect(getParentDeathSignal()).toBe('SIGWINCH')
      expect(w1.fired).toBe(false)
      w3.close()
      expect(getParentDeathSignal()).toBe('SIGTERM') // back to w2's, not left at w3's
      w1.close()
      expect(getParentDeathSignal()).toBe('SIGTERM') // w2 still needs it
      w2.close()
      w2.close()
      expect(getParentDeathSignal()).toBe('SIGHUP')
    } finally {
      setParentDeathSignal(before)
    }
  })
})

describe('watchParent without the native addon', () => {
  it('falls back to a getppid poll and says so', async () => {
    // A copy of the built package with no build/ and no prebuilds/: the addon cannot load.
    const dir = mkdtempSync(join(tmpdir(), 'reapkit-noaddon-'))
    try {
      cpSync(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true })
      cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'))
      cpSync(join(ROOT, 'binding.gyp'), join(dir, 'binding.gyp'))
      symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
      const { intermediate, out } = await startChain('intermediate', 'none', {
        REAPKIT_DIST: join(dir, 'dist', 'cjs', 'index.js'),
        REAPKIT_ADDON: '', // the sanitizer run's explicit addon would load one: this copy must have none
        POLL_MS: '50',
      })
      const ready = await out.next((m) => m.event === 'ready', 15_000, 'the watcher to start')
      expect(ready).toMatchObject({ native: false, mechanism: 'poll' })
      intermediate.kill('SIGKILL')
      expect((await out.next((m) => m.event === 'onExit', 10_000, 'onExit')).info.mechanism).toBe('poll')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('watchParent arguments', () => {
  it('rejects bad options before touching the kernel', () => {
    const before = linux ? getParentDeathSignal() : null
    expect(() => watchParent({ onExit: 5 as never })).toThrow(TypeError)
    expect(() => watchParent({ deathSignal: 'SIGNOPE' as never })).toThrow(expect.objectContaining({ code: 'ERR_UNKNOWN_SIGNAL' }))
    expect(() => watchParent({ deathSignal: 0 })).toThrow(expect.objectContaining({ code: 'ERR_UNKNOWN_SIGNAL' }))
    expect(() => watchParent({ pollIntervalMs: -5 })).toThrow(RangeError)
    expect(() => watchParent({ expectedParentPid: 0 })).toThrow(RangeError)
    if (linux) expect(getParentDeathSignal()).toBe(before)
  })

  it("capabilities().parentWatch is the mechanism watchParent() uses by default (the death signal is opt-in: 'pdeathsig' only when armed)", () => {
    const w = watchParent({ onExit: () => {} })
    try {
      expect(capabilities().parentWatch).toBe(w.mechanism)
      expect(w.mechanism).toBe(linux ? 'pidfd' : capabilities().kqueue ? 'kqueue' : 'poll')
    } finally {
      w.close()
    }
  })
})

