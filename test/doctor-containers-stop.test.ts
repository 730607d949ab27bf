// Issue 18 item 1: `reapkit doctor --stop`'s container stop is the library's container stop (the
// same unit and steps, stop/escalate.ts over container/unit.ts), so it has that stop's bound: one
// deadline, grace + confirm, that every engine call is cut short at. Before, doctor had its own
// engine sequence: a hung engine cost each call its own 10 s bound, one after the other (its stop,
// then its kill: over 20 s for a 2 s grace and a 2 s confirm), and the first look alone 10 s.
//
// The engine here is a fake `docker` on PATH (a shell script): it answers `inspect` as the test
// says and hangs on what the test says, as a daemon that stopped answering does. No container is
// started; every hung call's pid is recorded and checked gone (and SIGKILLed if not) at the end.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { findLeakedContainers, type LeakedContainer, stopLeakedContainer, stopLeakedContainers } from '../lib/index'
import { formatOwner, ownerOf } from '../lib/mechanisms/container/owner'
import { containerState, describeWithEngines, engineRun, enginesSkipReason, removeLabelledAndWait, testEngines, testLabel } from './containers'
import { type FakeCall, type FakeEngine, writeFakeEngine } from './fake-engine'
import { exitOf, isGone, procStat, waitFor } from './helpers'

const ID = 'f'.repeat(64)

/** A leaked container as findLeakedContainers() lists one (an owner that is gone), of the fake engine. */
const leaked: LeakedContainer = { engine: 'docker', id: ID, name: 'doctor-fake', image: 'busybox', state: 'running', autoRemove: false, owner: null, runId: null, why: 'test' }

describe.runIf(process.platform === 'linux')('doctor --stop: a leaked container goes through the container unit', () => {
  let dir = ''
  let path: string | undefined
  let fake: FakeEngine | undefined
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'reapkit-doctor-fake-'))
    path = process.env.PATH
    process.env.PATH = `${dir}${delimiter}${path ?? ''}`
  })
  afterEach(async () => {
    process.env.PATH = path
    const pids = fake?.pids() ?? []
    fake = undefined
    try {
      // The stop cuts its calls short (SIGKILL): none of the fake's hung calls outlives it.
      await waitFor(() => pids.every(isGone), 10_000, "the fake engine's hung calls to be killed")
    } finally {
      // Only the fake's own calls, by the pids they wrote, and only while such a pid is still our
      // child (the engine calls are this process's execFile children): a pid reused since is not ours.
      for (const p of pids) if (!isGone(p) && procStat(p)?.[1] === String(process.pid)) process.kill(p, 'SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    }
  })

  /** The fake `docker`: `inspect` prints `status` (or hangs when it is 'hang'); each command in `hang` hangs. */
  function fakeDocker(status: string, hang: string[]): void {
    const calls: Record<string, FakeCall> = { inspect: { print: status } }
    for (const c of hang) calls[c] = { hangSeconds: 1000 }
    fake = writeFakeEngine(dir, { bin: 'docker', calls, recordPids: true })
  }

  it("an engine whose stop and kill hang: 'survived' with the engine's error, within the stop's one deadline (not each call's own bound in turn)", async () => {
    fakeDocker('running', ['stop', 'kill'])
    const started = performance.now()
    const result = await stopLeakedContainer(leaked, { graceMs: 2000, confirmMs: 2000 })
    const elapsed = performance.now() - started
    expect(result).toEqual({ engine: 'docker', id: ID, name: 'doctor-fake', state: 'survived', error: expect.stringMatching(/docker (stop|kill).*did not answer/) })
    // The deadline is 4 s (and the close's wait for the calls it cut short); before, 2 + 10 s for the stop, then 10 s for the kill.
    expect(elapsed).toBeGreaterThanOrEqual(2000)
    expect(elapsed).toBeLessThan(15_000)
  }, 60_000)

  it("an engine that answers nothing: 'uncertain' with the engine's error, never 'gone', within the stop's one deadline", async () => {
    fakeDocker('hang', ['inspect', 'stop', 'kill'])
    const started = performance.now()
    const result = await stopLeakedContainer(leaked, { graceMs: 0, confirmMs: 1500 })
    const elapsed = performance.now() - started
    expect(result).toEqual({ engine: 'docker', id: ID, name: 'doctor-fake', state: 'uncertain', error: expect.stringMatching(/docker inspect.*did not answer/) })
    // The deadline is 1.5 s; before, the first look alone was given 10 s.
    expect(elapsed).toBeLessThan(8000)
  }, 60_000)
})

// The container unit's looks by id (looks.ts lookKnown) read 'paused' as not running: through the
// unit, a paused leaked container (no --rm) was reported 'gone' at the first look and left paused
// (doctor's own sequence before the unit did end it). A paused container is frozen, not ended: it
// is stopped (docker's stop; podman refuses to stop a paused one, and its kill ends it) and
// reported gone only once the engine says it has exited.
const skip = enginesSkipReason()

describeWithEngines('doctor --stop: a paused leaked container', skip, () => {
  let label = ''
  beforeEach(() => {
    label = testLabel()
  })
  afterEach(async () => {
    for (const engine of testEngines()) await removeLabelledAndWait(engine, label)
  })

  for (const engine of testEngines()) {
    it(`${engine.name}: is ended through the engine before it is reported gone`, async () => {
      const owner = spawn('sleep', ['1000'], { stdio: 'ignore' })
      await new Promise((r) => owner.once('spawn', r))
      const value = formatOwner(ownerOf(owner.pid!))
      owner.kill('SIGKILL')
      await exitOf(owner)
      const run = engineRun(engine, ['run', '-d', '--label', label, '--label', `reapkit.owner=${value}`, engine.image, 'sleep', '1000'])
      expect(run.code, run.stderr).toBe(0)
      const id = run.stdout.trim()
      expect(engineRun(engine, ['pause', id]).code).toBe(0)
      const found = await findLeakedContainers({ engines: [engine.name], labels: [label], env: engine.env })
      expect(found.leaked).toEqual([expect.objectContaining({ id, state: 'paused', autoRemove: false })])
      const stopped = await stopLeakedContainers(found, { graceMs: 2000, confirmMs: 10_000 })
      expect(stopped).toEqual([expect.objectContaining({ id, state: 'gone' })])
      expect(containerState(engine, id)).toBe('exited')
    }, 120_000)
  }
})
