// Randomized stop scenarios on real process trees, seeded and reproducible: each scenario builds a
// tree (random depth and width; nodes that ignore SIGTERM, exit at stdin end, double-fork and setsid,
// exec through `sh -c`), starts it from a host (through the `reapkit` command, or through the
// library's Supervisor), and stops the host at a random moment (mid-spawn included) by SIGKILL,
// SIGTERM or stdin end, sometimes SIGKILLing it again mid-shutdown. After each: zero survivors and
// zero adopted zombies left unreaped, checked by reapkit/testing's capture (this test process is a
// child subreaper, so even setsid escapees cannot hide from it).
//   TORTURE_SEED=n replays a run; TORTURE_SCALE=k runs k times as many scenarios.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { exitOf, ROOT, spawnGroup, zombieChildren } from '../helpers'
import { SEED, sized } from './size'

const { captureProcesses } = require(join(ROOT, 'dist', 'cjs', 'testing.js'))
const HOST = join(__dirname, 'torture-host.cjs')
const GRACE = 300
const N = sized(24)
const dir = mkdtempSync(join(tmpdir(), 'reapkit-torture-'))
const totals = { scenarios: 0, processes: 0, survivors: 0, zombies: 0 }
afterAll(() => {
  rmSync(dir, { recursive: true, force: true })
  console.log(`torture: seed ${SEED}: ${totals.scenarios} scenarios, ${totals.processes} tree processes, ${totals.survivors} survivors, ${totals.zombies} adopted zombies left`)
})

/** mulberry32: a small seeded PRNG, so a scenario is a pure function of its seed. */
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

type Kill = 'SIGKILL' | 'SIGTERM' | 'stdin-end'
interface Scenario {
  mode: 'cli' | 'library'
  kill: Kill
  /** ms after the host says it started the tree; null: once every node is up, plus `afterUpMs`. */
  delayMs: number | null
  afterUpMs: number
  /** SIGKILL the host again this long after a graceful trigger (mid-shutdown), or null. */
  secondKillMs: number | null
  /** [index, parent, flags] */
  nodes: Array<[number, number, string]>
}

function scenario(seed: number): Scenario {
  const rnd = prng(seed)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!
  const mode = rnd() < 0.5 ? 'cli' : 'library'
  const kill = pick(['SIGKILL', 'SIGTERM', 'stdin-end'] as const)
  const secondKillMs = kill !== 'SIGKILL' && rnd() < 0.3 ? Math.floor(rnd() * 300) : null
  // What each mode promises: the wrapper, everything (setsid escapees included, host SIGKILLed or
  // not). The library without a wrapper: its groups on a graceful stop; on a host SIGKILL, before or
  // during the stop, only the direct child (the kernel's death signal): those trees are one node.
  const flat = mode === 'library' && (kill === 'SIGKILL' || secondKillMs !== null)
  const nodes: Scenario['nodes'] = []
  const grow = (parent: number, depth: number): void => {
    const i = nodes.length
    let flags = ''
    if (rnd() < 0.3) flags += 'T'
    if (rnd() < 0.3) flags += 'E'
    if (parent >= 0) {
      const r = rnd()
      if (mode === 'cli' && r < 0.25) flags += 'D'
      else if (r < 0.45) flags += 'S'
    }
    nodes.push([i, parent, flags || '-'])
    if (flat || depth >= 3) return
    const width = Math.floor(rnd() * (depth === 0 ? 4 : 3))
    for (let k = 0; k < width && nodes.length < 9; k++) grow(i, depth + 1)
  }
  grow(-1, 0)
  const when = rnd()
  return {
    mode,
    kill,
    delayMs: when < 0.35 ? Math.floor(rnd() * 40) : null, // mid-spawn
    afterUpMs: Math.floor(rnd() * 150),
    secondKillMs,
    nodes,
  }
}

const describeText = (s: Scenario): string =>
  `${s.mode}, ${s.kill}${s.delayMs !== null ? ` ${s.delayMs} ms after spawn` : ` ${s.afterUpMs} ms after up`}` +
  `${s.secondKillMs !== null ? `, SIGKILL ${s.secondKillMs} ms into the shutdown` : ''}; tree ${s.nodes.map((n) => `${n[0]}<${n[1]}:${n[2]}`).join(' ')}`

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The scenario's processes still alive once they have had `ms` to go (checked every 20 ms). */
async function survivorsAfter(capture: { survivors(): number[] }, ms: number): Promise<number[]> {
  const deadline = Date.now() + ms
  let survivors = capture.survivors()
  while (survivors.length > 0 && Date.now() < deadline) {
    await sleep(20)
    survivors = capture.survivors()
  }
  return survivors
}

describe.runIf(process.platform === 'linux')(`torture scenarios (seed ${SEED}, replay with TORTURE_SEED=${SEED})`, () => {
  for (let k = 0; k < N; k++) {
    const s = scenario(SEED + k)
    it(`#${k}: ${describeText(s)}`, async () => {
      const plan = join(dir, `plan-${k}`)
      writeFileSync(plan, s.nodes.map((n) => n.join(' ')).join('\n') + '\n')
      const capture = captureProcesses()
      try {
        const host = spawnGroup(process.execPath, [HOST, s.mode, plan], {
          stdio: ['pipe', 'pipe', 'inherit'],
          env: { TORTURE_GRACE_MS: String(GRACE) },
        })
        await new Promise((resolve, reject) => {
          host.stdout!.once('data', resolve)
          host.once('exit', () => reject(new Error('the host exited before starting the tree')))
        })
        const upCount = () => {
          try {
            return readFileSync(`${plan}.pids`, 'utf8').trim().split('\n').length
          } catch {
            return 0
          }
        }
        if (s.delayMs !== null) {
          await sleep(s.delayMs)
        } else {
          const deadline = Date.now() + 10_000
          while (upCount() < s.nodes.length && Date.now() < deadline) await sleep(5)
          expect(upCount(), 'every node started').toBe(s.nodes.length)
          await sleep(s.afterUpMs)
        }
        if (s.kill === 'stdin-end') host.stdin!.end()
        else host.kill(s.kill)
        if (s.secondKillMs !== null) {
          await sleep(s.secondKillMs)
          host.kill('SIGKILL')
        }
        await exitOf(host, 10_000)
        // Bounded: close timeout + grace + SIGKILL + slack, with the pids written as they started.
        const survivors = await survivorsAfter(capture, 8000)
        totals.scenarios++
        totals.processes += upCount()
        totals.survivors += survivors.length
        const zombies = adoptedZombies()
        totals.zombies += zombies.length
        expect(survivors, `survivors (replay: TORTURE_SEED=${SEED}, scenario #${k})`).toEqual([])
        expect(zombies, `adopted zombies left unreaped (replay: TORTURE_SEED=${SEED}, scenario #${k})`).toEqual([])
      } finally {
        await capture.killSurvivors()
        capture.stop()
      }
    })
  }
})

// Stops in the first milliseconds (issue 23): spawn() used to return before the child led its
// group, and a stop in that window listed nobody but the leader, so the tree it forked next ran on.
// Library mode, a tree of up to 9 nodes (no setsid escapees: the library alone promises its group;
// no node exits at stdin end: a cascade of such exits during shutdownAll's close phase can outrun
// the group-trust witnesses, a limit of that rule (spawn.ts) that is not about the first ms),
// stopped 0..7 ms after spawn: by the host itself (0 = synchronously after spawn() returns), with
// killProcessGracefully or shutdownAll, or by SIGTERM to the host (ms after it said it started the
// tree), whose handler runs shutdownAll.
const EARLY = sized(24) // each 24: every delay 0..7 by each of the three stops
// TORTURE_LAUNCHER=1: in every other scenario the leader is a launcher that exits once it has
// started its children (tree-node.sh's X). A known limit, kept out of the default run: when the
// leader is gone and every member pinned as a witness exits after forking (a chain of launchers),
// the group can no longer be proven ours (spawn.ts, "Group trust") and is declared gone with its
// newest members running. Measured: 5 of 480 such scenarios (seed 30001125, scale 20, loaded).
const LAUNCHER = process.env.TORTURE_LAUNCHER === '1'
describe.runIf(process.platform === 'linux')(`torture: stops 0-7 ms after spawn (seed ${SEED}, replay with TORTURE_SEED=${SEED})`, () => {
  for (let k = 0; k < EARLY; k++) {
    const rnd = prng((SEED ^ 0x5eed) + k)
    const delayMs = k % 8
    const by = (['kill', 'shutdownAll', 'SIGTERM'] as const)[Math.floor(k / 8) % 3]!
    const nodes: Scenario['nodes'] = []
    const grow = (parent: number, depth: number): void => {
      const i = nodes.length
      let flags = ''
      if (rnd() < 0.3) flags += 'T'
      if (parent >= 0 && rnd() < 0.3) flags += 'S'
      if (parent < 0 && LAUNCHER && k % 2 === 0) flags += 'X' // the leader exits once it has started its children
      nodes.push([i, parent, flags || '-'])
      if (depth >= 3) return
      const width = 1 + Math.floor(rnd() * (depth === 0 ? 3 : 2))
      for (let j = 0; j < width && nodes.length < 9; j++) grow(i, depth + 1)
    }
    grow(-1, 0)
    const tree = nodes.map((n) => `${n[0]}<${n[1]}:${n[2]}`).join(' ')
    it(`early #${k}: library, ${by === 'kill' ? 'killProcessGracefully' : by} ${delayMs} ms after spawn; tree ${tree}`, async () => {
      const plan = join(dir, `early-${k}`)
      writeFileSync(plan, nodes.map((n) => n.join(' ')).join('\n') + '\n')
      const capture = captureProcesses()
      try {
        const args = by === 'SIGTERM' ? [HOST, 'library', plan] : [HOST, 'library', plan, String(delayMs), by]
        const host = spawnGroup(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'], env: { TORTURE_GRACE_MS: String(GRACE) } })
        if (by === 'SIGTERM') {
          await new Promise((resolve, reject) => {
            host.stdout!.once('data', resolve)
            host.once('exit', () => reject(new Error('the host exited before starting the tree')))
          })
          if (delayMs > 0) await sleep(delayMs)
          host.kill('SIGTERM')
        }
        await exitOf(host, 10_000)
        expect(host.exitCode, 'the host ran its shutdownAll to the end').toBe(0)
        const survivors = await survivorsAfter(capture, 8000)
        totals.scenarios++
        totals.survivors += survivors.length
        const zombies = adoptedZombies()
        totals.zombies += zombies.length
        expect(survivors, `survivors (replay: TORTURE_SEED=${SEED}, early scenario #${k})`).toEqual([])
        expect(zombies, `adopted zombies left unreaped (replay: TORTURE_SEED=${SEED}, early scenario #${k})`).toEqual([])
      } finally {
        await capture.killSurvivors()
        capture.stop()
      }
    })
  }
})

/** Zombies whose parent is this test process and that no ChildProcess of ours is waiting for. */
function adoptedZombies(): number[] {
  return zombieChildren().filter((pid) => !isLibuvChild(pid))
}

function isLibuvChild(pid: number): boolean {
  // Our hosts are reaped by libuv as they exit (exitOf above waited for that); anything else is adopted.
  return (process as unknown as { _getActiveHandles(): Array<{ pid?: number }> })._getActiveHandles().some((h) => h.pid === pid)
}
