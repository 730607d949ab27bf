// sup.restart(id) (lib/policies/supervisor/restart-requested.ts): a running child stopped and
// started again because someone asked, whatever its restart policy, with real children. Every wait
// bounded; every incarnation tracked and stopped after each test (cleanupAfterEach).
import { spawn } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { exitOf, isGone, waitFor } from './helpers'
import { cleanupAfterEach, settled } from './supervisor-cleanup'

const posix = process.platform !== 'win32'
const { supervise, tempDir } = cleanupAfterEach()

describe.runIf(posix)('Supervisor restart()', () => {
  it("stops a running child (policy 'never') and starts it again at once: same record, new pid, reason 'requested'", async () => {
    const { sup, events } = supervise()
    const first = sup.spawn('sleep', ['1000'], { requestId: 'svc' })
    const { stop, record } = await sup.restart('svc')
    expect(stop.pid).toBe(first.pid)
    expect(stop.escalated).toBe(false)
    expect(isGone(first.pid!)).toBe(true)
    expect(record).toMatchObject({ status: 'running', restarts: 1 })
    expect(record.pid).not.toBe(first.pid)
    expect(record.incarnations.map((i) => i.reason)).toEqual(['start', 'requested'])
    expect(sup.get('svc')?.pid).toBe(record.pid)
    expect(events).toEqual(['spawn', 'exit', 'restart', 'spawn'])
    // Before: metrics().restarts counted it, though it says "made by restart policies".
    expect(sup.metrics()).toMatchObject({ starts: 2, restarts: 0, requestedRestarts: 1 })
  })

  it('a child waiting out a long backoff starts now, and the cancelled wait starts nothing more', async () => {
    const { sup } = supervise()
    sup.spawn('sh', ['-c', 'exit 1'], { requestId: 'crashy', restart: 'on-failure', backoff: { initialMs: 60_000, jitter: 0 } })
    await settled(sup, 'crashy', 'restarting')
    const { record } = await sup.restart('crashy')
    expect(record.incarnations.map((i) => i.reason)).toEqual(['start', 'requested'])
    // The new incarnation exits 1 at once: the policy goes on from there (a new 60 s wait), nothing else starts.
    await settled(sup, 'crashy', 'restarting')
    expect(sup.get('crashy')?.incarnations).toHaveLength(2)
    expect(sup.metrics()).toMatchObject({ restarts: 0, requestedRestarts: 1 })
  })

  it('a policy restart whose spawn fails after a requested incarnation counts as the policy\'s, not as requested', async () => {
    const { sup } = supervise()
    const dir = tempDir('reapkit-requested-')
    const script = join(dir, 'svc.sh')
    writeFileSync(script, '#!/bin/sh\nexec sleep 1000\n', { mode: 0o755 })
    sup.spawn(script, [], { requestId: 'svc', stdio: 'ignore', restart: 'on-failure', backoff: { initialMs: 10 }, intensity: { maxRestarts: 1 } })
    const { record } = await sup.restart('svc')
    rmSync(script) // the policy's next start fails (ENOENT)
    process.kill(record.pid, 'SIGKILL') // a failure of the requested incarnation: the policy restarts it
    await settled(sup, 'svc', 'given-up')
    expect(sup.get('svc')!.incarnations.map((i) => i.reason)).toEqual(['start', 'requested'])
    expect(sup.metrics()).toMatchObject({ restarts: 1, requestedRestarts: 1, startFailures: 1 })
  })

  it('refuses what it cannot restart: a finished child, one it did not spawn, an unknown id, a bad id', async () => {
    const { sup } = supervise()
    sup.spawn('sh', ['-c', 'exit 0'], { requestId: 'done' })
    await settled(sup, 'done', 'exited')
    await expect(sup.restart('done')).rejects.toMatchObject({ code: 'ERR_REAPKIT_NOT_RUNNING' })
    const other = spawn('sleep', ['1000'], { stdio: 'ignore' })
    try {
      sup.adopt(other, { requestId: 'adopted' })
      await expect(sup.restart('adopted')).rejects.toMatchObject({ code: 'ERR_REAPKIT_NOT_SUPERVISED' })
    } finally {
      other.kill('SIGKILL')
      await exitOf(other)
    }
    await expect(sup.restart('nope')).rejects.toMatchObject({ code: 'ERR_REAPKIT_NOT_SUPERVISED' })
    await expect(sup.restart({} as never)).rejects.toThrow(TypeError)
  })

  it('a shutdownAll() during its stop: the child is not started again', async () => {
    const { sup } = supervise({ graceMs: 1000 })
    sup.spawn('sh', ['-c', 'trap "" TERM; exec sleep 1000'], { requestId: 'stubborn' }) // SIGTERM ignored: the stop takes the grace
    await waitFor(() => sup.get('stubborn')?.status === 'running', 10_000, 'it to run')
    await new Promise((r) => setTimeout(r, 200)) // the trap is set
    const restarting = sup.restart('stubborn')
    await sup.shutdownAll()
    await expect(restarting).rejects.toMatchObject({ code: 'ERR_REAPKIT_NOT_RESTARTED' })
    expect(sup.get('stubborn')?.status).toMatch(/^(killed|terminated)$/)
    expect(sup.get('stubborn')?.incarnations).toHaveLength(1)
  })
})
