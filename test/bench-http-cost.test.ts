// bench/http-cost.mjs: the order of its slices (fair to both sides) and its servers' end when the
// bench is interrupted (they run detached, in groups of their own: nothing else would kill them).
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { childrenOf, exitOf, isGone, ROOT, spawnGroup, trackGroup, waitFor } from './helpers'

const BENCH = join(ROOT, 'bench', 'http-cost.mjs')

type Servers = { plain: string[]; drain: string[] }
type RoundOrder = (servers: Servers, r: number) => string[]

describe('bench/http-cost.mjs', () => {
  it('each side goes first in half the rounds, and the two sides sit at the same positions on average', async () => {
    const { roundOrder } = (await import(BENCH as string)) as { roundOrder: RoundOrder }
    for (const [perSide, rounds] of [[2, 4], [6, 24]] as const) {
      const servers: Servers = { plain: [], drain: [] }
      for (let i = 0; i < perSide; i++) servers.plain.push(`p${i}`), servers.drain.push(`d${i}`)
      const positions = { p: 0, d: 0 }
      let plainFirst = 0
      const places = new Map<string, Set<number>>()
      for (let r = 0; r < rounds; r++) {
        const order = roundOrder(servers, r)
        expect([...order].sort()).toEqual([...servers.plain, ...servers.drain].sort()) // each process once
        if (order[0]!.startsWith('p')) plainFirst++
        order.forEach((name, at) => {
          positions[name[0] as 'p' | 'd'] += at
          places.set(name, (places.get(name) ?? new Set()).add(at))
        })
      }
      expect(plainFirst).toBe(rounds / 2)
      expect(positions.p).toBe(positions.d)
      for (const seen of places.values()) expect(seen.size).toBeGreaterThan(1) // each process moves
    }
  })

  it.runIf(process.platform === 'linux')('SIGINT to the bench while its servers are up: they are killed with it', async () => {
    const bench = spawnGroup(process.execPath, [BENCH], { env: { BENCH_QUICK: '1' }, stdio: 'ignore' })
    // Quick mode: 2 servers per side, each in a group of its own, tracked as each appears: the
    // cleanup kills them if the bench did not, even when this wait fails.
    await waitFor(() => {
      const found = childrenOf(bench.pid!)
      for (const pid of found) trackGroup(pid)
      return found.length === 4
    }, 30_000, 'the bench to start its four servers')
    const servers = childrenOf(bench.pid!)
    bench.kill('SIGINT')
    expect(await exitOf(bench, 10_000)).toEqual({ code: 130, signal: null })
    await waitFor(() => servers.every(isGone), 10_000, 'the servers to be gone')
  })
})
