// A podman container is 'stopping' while its stop is in flight: `ps` lists it as not running, yet
// its PID 1 runs. Here PID 1 ignores SIGTERM and the engine's `kill` is slow (answers 1 s late) or
// fails: a `podman` client on PATH (a shell script, the input under test) that passes every other
// call to the real podman.
// Before:
// - once the grace was cut short (abortSignal), the look ~200 ms later saw 'stopping', counted it
//   as not running and reported the container 'gone'; the close then SIGKILLed the in-flight
//   `podman kill`, so PID 1 ran on (the container left 'stopping');
// - with --rm and a kill that failed, the 'stopping' container counted as a leftover: `rm -f -t 0`
//   dropped its record and left PID 1 running, and the stop said 'gone'.
import { expect, it } from 'vitest'
import { killProcessGracefully } from '../lib/index'
import { describeWithEngines, engineRun, enginesSkipReason, type TestEngine, testEngines } from './containers'
import { containerTestContext, IGNORES_TERM } from './containers-lib'
import { type FakeEngine, fakeEngine } from './fake-engine'
import { exitOf, isGone, procStat } from './helpers'

const podman = testEngines().find((e) => e.name === 'podman')
const skip = enginesSkipReason() ?? (podman ? null : 'no podman engine')

/** A `podman` whose `kill` answers 1 s late ('slow') or fails ('fail'); every other call is the real one. */
function podmanWithKill(engine: TestEngine, mode: 'slow' | 'fail'): FakeEngine {
  const kill = mode === 'slow' ? { delaySeconds: 1 } : { fail: 'Error: kill failed' }
  return fakeEngine({ bin: 'podman', calls: { kill }, passTo: engine })
}

/** The host pid of the container's PID 1. */
function pid1Of(engine: TestEngine, id: string): number {
  return Number(engineRun(engine, ['inspect', '--format', '{{.State.Pid}}', id]).stdout.trim())
}

describeWithEngines(`containers: a podman container 'stopping' is not gone`, skip, () => {
  const t = containerTestContext()
  const engine = podman!

  /** Runs `stop` on a fresh container; whatever happens, its PID 1 (this test's own) is killed: podman's `rm -f` of a 'stopping' container would leave it. */
  async function withContainer(flags: string[], mode: 'slow' | 'fail', stop: (child: ReturnType<typeof t.run>, id: string, pid1: number) => Promise<void>): Promise<void> {
    const fake = podmanWithKill(engine, mode)
    let pid1 = 0
    let start: string | undefined
    try {
      const child = t.run(engine, flags, IGNORES_TERM, { env: fake.env })
      const [id] = await t.running(engine)
      pid1 = pid1Of(engine, id!)
      expect(pid1).toBeGreaterThan(0)
      start = procStat(pid1)?.[19] // its start time: the pid names this container's PID 1 only while it matches
      await stop(child, id!, pid1)
    } finally {
      if (pid1 > 0 && !isGone(pid1) && start !== undefined && procStat(pid1)?.[19] === start) process.kill(pid1, 'SIGKILL')
      fake.dispose()
    }
  }

  it("podman, no --rm: a grace cut short while the engine's kill is slow reports 'gone' only once PID 1 has exited", async () => {
    await withContainer([], 'slow', async (child, id, pid1) => {
      const abort = new AbortController()
      const timer = setTimeout(() => abort.abort(), 2000) // `podman stop -t 13` is under way, the container 'stopping'
      const result = await killProcessGracefully(child, { graceMs: 15_000, confirmMs: 5000, abortSignal: abort.signal })
      clearTimeout(timer)
      const [outcome] = result.containers
      expect(outcome).toEqual(expect.objectContaining({ ids: [id], state: 'gone', survivors: [] }))
      expect(isGone(pid1)).toBe(true) // before: 'gone' while PID 1 ran on, the container left 'stopping'
      expect(result.uncertain).toBe(false)
    })
  })

  it("podman --rm, the engine's kill fails: the container is reported as a survivor with the error, never removed while 'stopping'", async () => {
    await withContainer(['--rm'], 'fail', async (child, id, pid1) => {
      const abort = new AbortController()
      const timer = setTimeout(() => abort.abort(), 2000)
      const result = await killProcessGracefully(child, { graceMs: 15_000, confirmMs: 3000, abortSignal: abort.signal })
      clearTimeout(timer)
      const [outcome] = result.containers
      expect(isGone(pid1)).toBe(false) // the kill failed: PID 1 runs on (the engine's stop has not reached its own kill)
      expect(outcome).toEqual(expect.objectContaining({ ids: [id], state: 'survived', survivors: [id] })) // before: 'gone'
      expect(String(outcome!.error)).toMatch(/kill failed/)
      expect(result.containerSurvivors).toEqual([id])
      expect(engineRun(engine, ['inspect', '--format', '{{.State.Status}}', id]).stdout.trim()).toBe('stopping') // its record kept: no `rm -f` of it
    })
  })

  it("podman, no --rm: a stop that joins the client's exit step and hurries it at its grace end reports 'gone' only once PID 1 has exited", async () => {
    await withContainer([], 'slow', async (child, id, pid1) => {
      child.kill('SIGKILL') // its exit step stops the container with the kill grace
      await exitOf(child)
      await new Promise((res) => setTimeout(res, 1500)) // the exit step's `podman stop -t N` is under way
      const result = await killProcessGracefully(child, { graceMs: 1000, confirmMs: 4000 })
      expect(result.containers).toEqual([expect.objectContaining({ ids: [id], state: 'gone', survivors: [] })])
      expect(isGone(pid1)).toBe(true) // before: 'gone' while PID 1 ran on, the container left 'stopping'
    })
  })
})
