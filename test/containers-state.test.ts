// Issue 18: a Supervisor's stateFile and containers. A supervisor SIGKILLed loses its container
// clients to the kernel's death signal, but their containers belong to the engine and run on: the
// next supervisor on the file stops them through the engine, by their run label, and only those
// that carry the recorded owner too. Real engines; every container carries this test's label.
import { randomUUID } from 'node:crypto'
import { spawn as nodeSpawn } from 'node:child_process'
import { mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Supervisor } from '../lib/index'
import { bootId } from '../lib/mechanisms/container/owner'
import { containersWith, describeWithEngines, engineRun, enginesSkipReason, removeLabelledAndWait, testEngines, testLabel, waitForEngine } from './containers'
import { DIST, exitOf } from './helpers'

const skip = enginesSkipReason()

/** A node process whose Supervisor (on `file`) spawns `<engine> run --rm ... sleep 1000`, then waits. */
const HOST = `
const { Supervisor } = require(process.argv[1])
const [file, bin, ...args] = process.argv.slice(2)
const s = new Supervisor({ stateFile: file, backstop: false })
const keep = process.env.KEEP_CLIENT === '1' ? { parentDeathSignal: false } : {} // the client outlives its host
s.leftovers.then(() => { s.spawn(bin, args, { stdio: 'ignore', ...keep }); setInterval(() => {}, 1000) })
`

describeWithEngines('containers: Supervisor stateFile', skip, () => {
  let label = ''
  let dir = ''
  let file = ''
  beforeEach(() => {
    label = testLabel()
    dir = mkdtempSync(join(tmpdir(), 'reapkit-ctr-state-'))
    file = join(dir, 'state.json')
  })
  afterEach(async () => {
    for (const engine of testEngines()) await removeLabelledAndWait(engine, label)
    rmSync(dir, { recursive: true, force: true })
  })

  for (const engine of testEngines()) {
    describe(engine.name, () => {
      it("a supervisor SIGKILLed with a container running: the next one on the file stops it through the engine; the file holds no secret of the client's environment nor of its -e flags", async () => {
        const env = { ...engine.env, REAPKIT_TEST_SECRET: 'hunter2' }
        const secrets = ['-e', 'TOKEN=s3cret', '--env=API_KEY=k3y']
        const host = nodeSpawn(process.execPath, ['-e', HOST, DIST, file, engine.bin, 'run', '--rm', ...secrets, '--label', label, engine.image, 'sleep', '1000'], { env, stdio: 'ignore' })
        try {
          await waitForEngine(() => containersWith(engine, label, false).length === 1, 60_000, 'the container to run')
          const [id] = containersWith(engine, label)
          await waitForEngine(() => readFileSync(file, 'utf8').includes('"container"'), 10_000, 'the run in the state file')
          const written = readFileSync(file, 'utf8')
          expect(written).not.toContain('hunter2')
          expect(written).not.toContain('s3cret')
          expect(written).not.toContain('k3y')
          expect(JSON.parse(written).processes[0].args).toEqual(expect.arrayContaining(['-e', 'TOKEN=<redacted>', '--env=API_KEY=<redacted>']))
          if (engine.env.DOCKER_HOST) expect(written).toContain(engine.env.DOCKER_HOST)
          host.kill('SIGKILL')
          await exitOf(host)
          await new Promise((r) => setTimeout(r, 1000))
          expect(containersWith(engine, label)).toEqual([id]) // the client died with its host; the container did not

          const sup = new Supervisor({ stateFile: file, graceMs: 1000, backstop: false })
          try {
            const report = (await sup.leftovers)!
            expect(report.dropped).toEqual([expect.objectContaining({ reason: 'gone' })])
            expect(report.containers).toEqual([expect.objectContaining({ engine: engine.name, ids: [id], state: 'gone', stopped: true })])
            expect(containersWith(engine, label)).toEqual([])
            expect(JSON.parse(readFileSync(file, 'utf8')).containers).toBeUndefined() // confirmed gone: forgotten
          } finally {
            sup.dispose()
          }
        } finally {
          host.kill('SIGKILL')
        }
      })

      it("adopted (onLeftovers 'adopt'): a predecessor's client that still runs is adopted with its container, and terminate() stops both", async () => {
        const env = { ...engine.env, KEEP_CLIENT: '1' }
        const host = nodeSpawn(process.execPath, ['-e', HOST, DIST, file, engine.bin, 'run', '--rm', '--label', label, engine.image, 'sleep', '1000'], { env, stdio: 'ignore' })
        let clientPid = 0
        try {
          await waitForEngine(() => containersWith(engine, label, false).length === 1, 60_000, 'the container to run')
          const [id] = containersWith(engine, label)
          await waitForEngine(() => readFileSync(file, 'utf8').includes('"container"'), 10_000, 'the run in the state file')
          clientPid = JSON.parse(readFileSync(file, 'utf8')).processes[0].pid
          host.kill('SIGKILL')
          await exitOf(host)
          const sup = new Supervisor({ stateFile: file, graceMs: 1000, onLeftovers: 'adopt', backstop: false })
          try {
            const report = (await sup.leftovers)!
            expect(report.adopted).toEqual([expect.objectContaining({ pid: clientPid, status: 'adopted' })])
            expect(report.containers).toEqual([]) // its container is the adopted record's
            expect(containersWith(engine, label, false)).toEqual([id])
            const result = await sup.terminate(clientPid, { graceMs: 1000 })
            expect(result.containers).toEqual([expect.objectContaining({ ids: [id], state: 'gone' })])
            expect(result.containerSurvivors).toEqual([])
            expect(containersWith(engine, label)).toEqual([])
          } finally {
            sup.dispose()
          }
        } finally {
          host.kill('SIGKILL')
          if (clientPid > 0) {
            try {
              process.kill(clientPid, 'SIGKILL') // ours: the client the host spawned (still its record's pid)
            } catch {
              // gone
            }
          }
        }
      })

      // A file shared with a sandbox: its writer's pid is a number in another PID namespace, so
      // nothing here can tell whether that owner is gone. Before, the label could not say so.
      it('a recorded run whose owner was in another PID namespace is not stopped, and stays in the file', async () => {
        const here = readlinkSync('/proc/self/ns/pid').replace(/^pid:\[(\d+)\]$/, 'pidns:$1')
        const owner = `${hostname()}/${bootId()}/4194304/1/${here === 'pidns:1' ? 'pidns:2' : 'pidns:1'}`
        const runId = randomUUID()
        const r = engineRun(engine, ['run', '-d', '--rm', '--label', label, '--label', `reapkit.run=${runId}`, '--label', `reapkit.owner=${owner}`, engine.image, 'sleep', '1000'])
        expect(r.code, r.stderr).toBe(0)
        const id = r.stdout.trim()
        const run = { engine: engine.name, bin: engine.bin, globals: [], env: { PATH: process.env.PATH, ...(engine.env.DOCKER_HOST ? { DOCKER_HOST: engine.env.DOCKER_HOST } : {}) }, runId, owner, autoRemove: true }
        writeFileSync(file, JSON.stringify({ version: 1, owner: null, processes: [], containers: [run] }), { mode: 0o600 })
        const sup = new Supervisor({ stateFile: file, graceMs: 1000, backstop: false })
        try {
          const report = (await sup.leftovers)!
          expect(report.containers).toEqual([expect.objectContaining({ runId, ids: [id], state: 'survived', survivors: [id], stopped: false, error: expect.objectContaining({ message: expect.stringMatching(/^owner in another PID namespace: not judged/) }) })])
          expect(containersWith(engine, label, false)).toEqual([id])
          expect((JSON.parse(readFileSync(file, 'utf8')).containers as Array<{ runId: string; owner: string }>).map((c) => [c.runId, c.owner])).toEqual([[runId, owner]])
        } finally {
          sup.dispose()
        }
      })

      it('a recorded run is stopped only where its containers carry the recorded owner; one that is not confirmed gone stays in the file', async () => {
        const owner = 'elsewhere/-/4194304/1'
        const mine = randomUUID()
        const forged = randomUUID()
        const start = (runId: string, ownerLabel: string) => {
          const r = engineRun(engine, ['run', '-d', '--rm', '--label', label, '--label', `reapkit.run=${runId}`, '--label', `reapkit.owner=${ownerLabel}`, engine.image, 'sleep', '1000'])
          expect(r.code, r.stderr).toBe(0)
          return r.stdout.trim()
        }
        start(mine, owner)
        const strangerId = start(forged, 'another/-/4194305/1')
        const client = (runId: string) => ({ engine: engine.name, bin: engine.bin, globals: [], env: { PATH: process.env.PATH, ...(engine.env.DOCKER_HOST ? { DOCKER_HOST: engine.env.DOCKER_HOST } : {}) }, runId, owner, autoRemove: true })
        // A client gone long ago (pid 4194304 is above any pid_max default), and a run whose client had exited.
        const processes = [{ pid: 4194304, start: '1', pgid: null, requestId: 'x', command: engine.bin, args: [], token: null, container: client(forged) }]
        writeFileSync(file, JSON.stringify({ version: 1, owner: null, processes, containers: [client(mine)] }), { mode: 0o600 })
        const sup = new Supervisor({ stateFile: file, graceMs: 1000, backstop: false })
        try {
          const report = (await sup.leftovers)!
          const byRun = Object.fromEntries(report.containers.map((c) => [c.runId, c]))
          expect(byRun[mine]).toMatchObject({ state: 'gone', stopped: true })
          expect(byRun[forged]).toMatchObject({ state: 'survived', survivors: [strangerId], stopped: false })
          expect(containersWith(engine, label, false)).toEqual([strangerId]) // never stopped on the file's word
          const kept = JSON.parse(readFileSync(file, 'utf8')).containers as Array<{ runId: string }>
          expect(kept.map((c) => c.runId)).toEqual([forged])
        } finally {
          sup.dispose()
        }
      })
    })
  }
})


// The args of any engine command a Supervisor spawns are written with their secrets redacted, not
// only a run reapkit recognizes (a `run -d`, `exec`, `create`: plain commands, recorded all the
// same). No engine: the client is a stand-in `docker` (a shell script that waits).
describe('containers: Supervisor stateFile, args of engine commands that are no recognized run', () => {
  let dir = ''
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'reapkit-state-redact-'))
    writeFileSync(join(dir, 'docker'), '#!/bin/sh\nexec sleep 1000\n', { mode: 0o755 })
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('hides -e/--env/--env-merge/--creds/--decryption-key values of run -d, container create and exec', async () => {
    const file = join(dir, 'state.json')
    const sup = new Supervisor({ stateFile: file, graceMs: 1000, backstop: false })
    const commands = [
      ['run', '-d', '-e', 'PASSWORD=hunter2', 'img'],
      ['container', 'create', '--env=PASSWORD=hunter3', '--creds', 'me:hunter4', 'img'],
      ['exec', '-ite', 'PASSWORD=hunter5', '--env-merge', 'X=hunter6', '--decryption-key=k:hunter7', 'ctr', 'sh'],
    ]
    try {
      await sup.leftovers
      for (const args of commands) sup.spawn(join(dir, 'docker'), args, { stdio: 'ignore' })
      const recordedCount = (): number => {
        try {
          return (JSON.parse(readFileSync(file, 'utf8')).processes ?? []).length
        } catch {
          return 0 // not written yet (each write replaces it whole)
        }
      }
      await waitForEngine(() => recordedCount() === 3, 10_000, 'the three clients in the state file')
      const written = readFileSync(file, 'utf8')
      expect(written).not.toMatch(/hunter/)
      const recorded = (JSON.parse(written).processes as Array<{ args: string[] }>).map((p) => p.args)
      expect(recorded).toEqual(
        expect.arrayContaining([
          ['run', '-d', '-e', 'PASSWORD=<redacted>', 'img'],
          ['container', 'create', '--env=PASSWORD=<redacted>', '--creds', '<redacted>', 'img'],
          ['exec', '-ite', 'PASSWORD=<redacted>', '--env-merge', 'X=<redacted>', '--decryption-key=<redacted>', 'ctr', 'sh'],
        ]),
      )
    } finally {
      await sup.shutdownAll()
      sup.dispose()
    }
  })
})
