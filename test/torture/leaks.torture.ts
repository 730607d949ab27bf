// Leak checks at scale: 10,000 spawn/kill lifecycles with fds, heap and RSS measured before, halfway
// and after; and the addon under worker_threads churn on every supported Node line.
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { exitOf, FIXTURES, jsonLines, spawnGroup } from '../helpers'
import { ensureNodeVersions, NODE_VERSIONS, nodeBinary } from '../node-versions'
import { sized } from './size'

const linux = process.platform === 'linux'

describe.runIf(linux)('leaks', () => {
  const cycles = sized(10_000)
  it(`${cycles} spawn → killProcessGracefully cycles: no fd left, heap flat, RSS flat from the first half to the second`, async () => {
    const child = spawnGroup(process.execPath, ['--expose-gc', join(__dirname, 'spawn-cycles.cjs'), String(cycles)])
    const out = jsonLines(child.stdout!)
    const r = await out.next((m) => m.cycles === cycles, 600_000, 'the cycle counts')
    expect(await exitOf(child, 30_000)).toEqual({ code: 0, signal: null })
    console.log(`leaks: ${JSON.stringify(r)}`)
    expect(r.after.fds, 'open fds').toBeLessThanOrEqual(r.before.fds)
    expect(r.after.heapMB - r.before.heapMB, 'heap growth, MB').toBeLessThan(5)
    // The allocator keeps arenas it has grown (the first half's growth); a leak would keep growing.
    expect(r.after.rssMB - r.half.rssMB, 'RSS growth over the second half, MB').toBeLessThan(Math.max(8, r.half.rssMB * 0.1))
  })

  const binaries = [{ label: `${process.versions.node} (this machine)`, bin: () => process.execPath }].concat(
    process.arch === 'x64' ? NODE_VERSIONS.map((v) => ({ label: v, bin: () => nodeBinary(v) })) : [],
  )
  for (const { label, bin } of binaries) {
    it(`worker_threads churn (${sized(200)} rounds) under Node ${label}: no crash, no thread or fd left`, async () => {
      if (bin() !== process.execPath) ensureNodeVersions()
      const rounds = sized(200)
      const child = spawnGroup(bin(), [join(FIXTURES, 'worker-churn.cjs'), String(rounds)])
      const result = await jsonLines(child.stdout!).next((m) => m.rounds === rounds, 300_000, 'the churn result')
      expect(await exitOf(child, 30_000)).toEqual({ code: 0, signal: null })
      expect(result.threadsAfter).toBe(result.threadsBefore)
      expect(result.fdsAfter).toBe(result.fdsBefore)
    })
  }
})
