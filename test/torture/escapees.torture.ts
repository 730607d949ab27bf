// The escapee family (issue 30 item 5): a server on the library path leaves its process group every
// way a server does (a setsid helper, a double-forked daemon, a daemon that ignores SIGTERM, a fork
// storm of setsid children at the moment of the stop), and its host stops it with
// killProcessGracefully, closeClient or a Supervisor's shutdownAll, a random moment after it is up.
//   contained (spawn({ cgroup: true })): every one ends, storm included: zero survivors, seen by
//     this test process's own capture (a child subreaper: nothing can hide from it), and the report
//     says what it saw ('cgroup', the cgroup gone and removed);
//   plain (no cgroup): the escapees run on, and the report must not claim otherwise: its reach is
//     'group', never 'cgroup' (a stop that cannot see escapees says so). What survived is counted,
//     then killed by the capture.
// Seeded and reproducible: TORTURE_SEED=n replays a run; TORTURE_SCALE=k runs k times as many.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { noCgroup, removeCgroups } from '../cgroup-lib'
import { exitOf, jsonLines, ROOT, spawnGroup } from '../helpers'
import { SEED, sized } from './size'

const { captureProcesses } = require(join(ROOT, 'dist', 'cjs', 'testing.js'))
const HOST = join(__dirname, 'escapee-host.cjs')
const N = sized(24)
const dir = mkdtempSync(join(tmpdir(), 'reapkit-escapees-'))
const totals = { contained: 0, plain: 0, processes: 0, containedSurvivors: 0, plainLeft: 0, plainClaimedCgroup: 0, storms: 0 }
afterAll(() => {
  rmSync(dir, { recursive: true, force: true })
  console.log(
    `escapees: seed ${SEED}: ${totals.contained} contained scenarios (${totals.containedSurvivors} survivors), ${totals.plain} plain ` +
      `(${totals.plainLeft} escapees left running, ${totals.plainClaimedCgroup} reports claiming the cgroup); ${totals.processes} processes, ${totals.storms} fork storms`,
  )
})

/** mulberry32, as in scenarios.torture.ts: a scenario is a pure function of its seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface Scenario {
  contain: boolean
  stop: 'kill' | 'close' | 'shutdownAll'
  kinds: string
  afterUpMs: number
}

function scenario(seed: number, k: number): Scenario {
  const rnd = prng(seed)
  let kinds = ''
  for (const kind of ['S', 'D', 'T']) for (let n = Math.floor(rnd() * 3); n > 0; n--) kinds += kind
  if (rnd() < 0.5) kinds += 'F'
  if (kinds === '') kinds = 'D'
  return {
    contain: k % 2 === 0, // half and half, whatever the seed
    stop: (['kill', 'close', 'shutdownAll'] as const)[Math.floor(rnd() * 3)]!,
    kinds,
    afterUpMs: Math.floor(rnd() * 100),
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function survivorsAfter(capture: { survivors(): Array<{ pid: number }> }, ms: number): Promise<Array<{ pid: number }>> {
  const deadline = Date.now() + ms
  let left = capture.survivors()
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(20)
    left = capture.survivors()
  }
  return left
}

describe.skipIf(process.platform !== 'linux' || noCgroup !== null)(`torture: escapees on the library path (seed ${SEED}, replay with TORTURE_SEED=${SEED})`, () => {
  for (let k = 0; k < N; k++) {
    const s = scenario(SEED + k, k)
    it(`#${k}: ${s.contain ? 'contained' : 'plain'}, ${s.stop} ${s.afterUpMs} ms after up; escapees ${s.kinds}`, async () => {
      const out = join(dir, `pids-${k}`)
      const capture = captureProcesses()
      let cgroup: string | null = null
      try {
        const host = spawnGroup(process.execPath, [HOST, s.contain ? 'contain' : 'plain', s.stop, out, s.kinds], { stdio: ['pipe', 'pipe', 'inherit'] })
        const lines = jsonLines(host.stdout!)
        const started = await lines.next((m) => m.event === 'started', 15_000, 'the host')
        cgroup = started.cgroup
        if (s.contain) expect(cgroup, `contained (${started.uncontained})`).not.toBeNull()
        const escapees = s.kinds.replace('F', '').length
        const up = () => (existsSync(out) ? readFileSync(out, 'utf8').trim().split('\n').length : 0)
        const deadline = Date.now() + 15_000
        while (up() < escapees + 1 && Date.now() < deadline) await sleep(5)
        expect(up(), 'the server and its escapees started').toBe(escapees + 1)
        await sleep(s.afterUpMs)
        host.stdin!.write('stop\n')
        const report = await lines.next((m) => m.event === 'report', 30_000, 'the stop report')
        await exitOf(host, 10_000)
        const storm = readFileSync(out, 'utf8').includes('storm ')
        if (storm) totals.storms++
        totals.processes += up() + (storm ? 40 : 0)
        if (s.contain) {
          totals.contained++
          const left = await survivorsAfter(capture, 8000)
          totals.containedSurvivors += left.length
          expect(left, `survivors (replay: TORTURE_SEED=${SEED}, scenario #${k})`).toEqual([])
          expect(report).toMatchObject({ reach: 'cgroup', survivors: [], cgroup: { gone: true, removed: true } })
          expect(existsSync(cgroup!)).toBe(false)
        } else {
          totals.plain++
          if (report.reach === 'cgroup') totals.plainClaimedCgroup++
          expect(report.reach, 'a stop without a cgroup never says it saw one').toBe('group')
          expect(report.cgroup).toBeNull()
          // Bounded settle, then count what the stop could not see (it said so).
          await sleep(200)
          const left = capture.survivors()
          totals.plainLeft += left.length
          // Every escapee that left the group is still there: the group stop cannot reach any of them.
          expect(left.length, 'the escapees the group stop could not see').toBeGreaterThanOrEqual(escapees)
        }
      } finally {
        await capture.killSurvivors()
        capture.stop()
        if (cgroup !== null) await removeCgroups([cgroup])
      }
    })
  }
})
