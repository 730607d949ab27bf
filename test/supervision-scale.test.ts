// The Supervisor at 2,000 children: its records (status per entry, history pruning) stay right, and
// shutdownAll escalates every wedged child without any of them reaching the cap. The children are
// tiny static C programs (bench/fixtures/exit-floor.c `wedged`: ignore stdin end and SIGTERM).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Supervisor } from '../lib/index'
import { buildExitFloor, trackGroup } from './helpers'

const linux = process.platform === 'linux'
let bin = ''
let removeBin = (): void => {}

beforeAll(() => {
  if (!linux) return
  ;({ bin, remove: removeBin } = buildExitFloor('sup-scale'))
})
afterAll(() => removeBin())

describe.runIf(linux)('Supervisor at 2,000 children', () => {
  it('records stay right: 1,000 exit on their own, 1,000 wedged are killed by shutdownAll, history keeps the newest', async () => {
    const sup = new Supervisor({ closeTimeoutMs: 250, graceMs: 500, backstop: false, history: 1500 })
    const kids = []
    try {
      for (let i = 0; i < 2000; i++) {
        const k = sup.spawn(bin, ['wedged'], { stdio: ['pipe', 'ignore', 'ignore'] })
        trackGroup(k.pid!)
        kids.push(k)
      }
      expect(sup.list().filter((r) => r.status === 'running')).toHaveLength(2000)
      // The first 1,000 die on their own (SIGKILL from outside the supervisor).
      const early = kids.slice(0, 1000)
      await Promise.all(
        early.map((k) => new Promise<void>((resolve) => {
          k.once('exit', () => resolve())
          k.kill('SIGKILL')
        })),
      )
      const records = sup.list()
      expect(records.filter((r) => r.status === 'exited')).toHaveLength(1000)
      expect(records.filter((r) => r.status === 'running')).toHaveLength(1000)
      const reports = await sup.shutdownAll()
      expect(reports).toHaveLength(1000)
      expect(reports.every((r) => r.escalated)).toBe(true)
      expect(reports.filter((r) => r.capped)).toHaveLength(0)
      expect(kids.every((k) => k.exitCode !== null || k.signalCode !== null)).toBe(true)
      // 2,000 finished, history 1,500: the 500 that finished first are dropped, the rest are right.
      const after = sup.list()
      expect(after).toHaveLength(1500)
      expect(after.filter((r) => r.status === 'killed')).toHaveLength(1000)
      expect(after.filter((r) => r.status === 'exited')).toHaveLength(500)
      expect(sup.get(kids[0]!.pid!)).toBeUndefined()
      expect(sup.get(kids[999]!.pid!)?.status).toBe('exited')
      expect(sup.get(kids[1999]!.pid!)?.status).toBe('killed')
    } finally {
      for (const k of kids) k.kill('SIGKILL')
      sup.dispose()
    }
  }, 120_000)
})
