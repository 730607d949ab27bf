// Issue 18, item 1: the container is a unit of the stop, under the stop's one deadline, and every
// stop path reports it the same way. The engine here stops answering in the middle of the stop: a
// `docker` client on PATH (a shell script, the input under test: the real client does every call
// until the stop is asked for, then each call hangs, as a daemon that hung mid-stop).
// Before:
// - the container step ran beside the stop with a deadline of its own (grace + confirm + 2.5 s), so a
//   hung engine made killProcessGracefully outlast its own bounds;
// - a shutdownAll whose cap ran out reported the container with no id (`ids: []`,
//   `containerSurvivors: []`) though the stop under way had found it.
import { describe, expect, it } from 'vitest'
import { closeClient, killProcessGracefully, type KillResult, spawnedInfo, Supervisor } from '../lib/index'
import { containerUnitFor, containerUnitUnderway } from '../lib/mechanisms/container/joined-unit'
import { ContainerUnit } from '../lib/mechanisms/container/unit'
import { StopJournal } from '../lib/mechanisms/stop/journal'
import type { ContainerRecord } from '../lib/mechanisms/container/stop'
import { containersWith, describeWithEngines, enginesSkipReason, removeLabelled, type TestEngine, testEngines, waitForEngine } from './containers'
import { containerTestContext, IGNORES_TERM } from './containers-lib'
import { type FakeEngine, fakeEngine } from './fake-engine'
import { trackGroup } from './helpers'

const docker = testEngines().find((e) => e.name === 'docker')
const skip = enginesSkipReason() ?? (docker ? null : 'no docker engine')

/** A `docker` that answers until it is asked to stop a container, and from then on hangs (30 s, or until its caller's bound kills it). */
function hangingDocker(engine: TestEngine): FakeEngine {
  return fakeEngine({ bin: 'docker', hangFrom: { command: 'stop', except: ['run'], seconds: 30 }, passTo: engine })
}

/** The shape every stop path gives a container the engine left unknown: named by its id, uncertain, with the error. */
function expectUncertainContainer(result: Pick<KillResult, 'containers' | 'containerSurvivors' | 'uncertain' | 'error'>, id: string): void {
  expect(result.containers).toEqual([expect.objectContaining({ engine: 'docker', ids: [id], state: 'uncertain', survivors: [id] })])
  expect(result.containerSurvivors).toEqual([id])
  expect(result.uncertain).toBe(true)
  expect((result.error as { code?: string } | null)?.code).toBe('ETIMEDOUT')
}

describeWithEngines('containers: the container as a unit of the stop', skip, () => {
  const t = containerTestContext()
  const engine = docker!

  /** Runs one stop path against an engine that hangs once asked to stop; cleans up whatever happens. */
  async function withHangingEngine(stop: (env: NodeJS.ProcessEnv, hung: () => boolean) => Promise<{ record: ContainerRecord | undefined }>): Promise<void> {
    const fake = hangingDocker(engine)
    let record: ContainerRecord | undefined
    try {
      record = (await stop(fake.env, fake.hung)).record
    } finally {
      fake.release() // the engine answers again: the stops under way (and the cleanup) can end it
      if (record) await waitForEngine(() => containerUnitUnderway(record!) === undefined, 30_000, 'the stop under way to end')
      fake.dispose()
    }
  }

  it("killProcessGracefully: an engine that hangs mid-stop costs no more than the stop's own grace + confirm; uncertain, the container named", async () => {
    await withHangingEngine(async (env, hung) => {
      const child = t.run(engine, ['--rm'], IGNORES_TERM, { env })
      const [id] = await t.running(engine)
      const started = performance.now()
      const result = await killProcessGracefully(child, { graceMs: 1000, confirmMs: 4000 })
      const took = performance.now() - started
      expect(hung()).toBe(true) // the engine's stop was asked for, and hung
      expectUncertainContainer(result, id!)
      // grace + confirm is 5 s; before, the container step's own deadline added 2.5 s more (about 7.8 s).
      expect(took).toBeLessThan(6500)
      expect(result.survivors).toEqual([]) // the client itself is gone
      expect(containersWith(engine, t.label, false)).toEqual([id]) // the engine never stopped it: the report is true
      return { record: spawnedInfo(child)?.container }
    })
  }, 120_000)

  it('closeClient, Supervisor.terminate and shutdownAll at its cap report the container the same way: its id, uncertain, with the error', async () => {
    type Stopped = { result: Pick<KillResult, 'containers' | 'containerSurvivors' | 'uncertain' | 'error'>; record: ContainerRecord | undefined; id: string | undefined }
    const paths: Array<[string, (env: NodeJS.ProcessEnv) => Promise<Stopped>]> = [
      [
        'closeClient',
        async (env) => {
          const child = t.run(engine, ['--rm'], IGNORES_TERM, { env })
          const [id] = await t.running(engine)
          return { result: await closeClient(child, { closeTimeoutMs: 300, graceMs: 1000 }), record: spawnedInfo(child)?.container, id }
        },
      ],
      [
        'Supervisor.terminate',
        async (env) => {
          const supervisor = new Supervisor({ backstop: false })
          try {
            const child = supervisor.spawn(engine.bin, ['run', '-i', '--rm', '--label', t.label, engine.image, ...IGNORES_TERM], { env, stdio: ['pipe', 'ignore', 'ignore'] })
            trackGroup(child.pid!) // dispose() does not stop children: the cleanup does, even when a wait below fails
            const [id] = await t.running(engine)
            return { result: (await supervisor.terminate(child.pid!, { graceMs: 1000 }))!, record: spawnedInfo(child)?.container, id }
          } finally {
            supervisor.dispose()
          }
        },
      ],
      [
        'shutdownAll at its cap',
        async (env) => {
          // The cap (3 s) comes while the stop waits on the hung engine (its grace alone is 4 s).
          const supervisor = new Supervisor({ backstop: false, closeTimeoutMs: 300, graceMs: 4000, shutdownTimeoutMs: 3000 })
          try {
            const child = supervisor.spawn(engine.bin, ['run', '-i', '--rm', '--label', t.label, engine.image, ...IGNORES_TERM], { env, stdio: ['pipe', 'ignore', 'ignore'] })
            trackGroup(child.pid!) // dispose() does not stop children: the cleanup does, even when a wait below fails
            const [id] = await t.running(engine)
            const [report] = await supervisor.shutdownAll()
            expect(report!.capped).toBe(true)
            return { result: report!, record: spawnedInfo(child)?.container, id }
          } finally {
            supervisor.dispose()
          }
        },
      ],
    ]
    for (const [name, run] of paths) {
      await withHangingEngine(async (env, hung) => {
        const { result, record, id } = await run(env)
        expect(hung(), name).toBe(true)
        expect(id, name).toBeDefined()
        expectUncertainContainer(result, id!)
        return { record }
      })
      removeLabelled(engine, t.label) // the hung engine never stopped it: the next path starts from none
    }
  }, 240_000)
})

describe('containers: a stop that has given up on its unit is not joined', () => {
  it('a stop arriving while the unit of a stop that gave up is closing starts its own unit (before: it joined and read the old word)', async () => {
    // No engine call is made: neither unit is swept. The record names an engine only for its fields.
    const record: ContainerRecord = { engine: 'docker', bin: 'docker', globals: [], env: {}, runId: 'given-up', owner: 'test', autoRemove: false }
    const first = containerUnitFor(record, new StopJournal(undefined), { confirmMs: 0 })
    first.survivors() // its stop gave up on it; its close (which cuts its calls short) is still to come
    const second = containerUnitFor(record, new StopJournal(undefined), { confirmMs: 0 })
    expect(second).toBeInstanceOf(ContainerUnit)
    expect(containerUnitUnderway(record)).toBe(second)
    await first.close()
    expect(containerUnitUnderway(record)).toBe(second) // the first one's close leaves the new unit listed
    await second.close()
    expect(containerUnitUnderway(record)).toBeUndefined()
  })
})
