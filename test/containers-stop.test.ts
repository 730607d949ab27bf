// Issue 18: a `docker|podman run -i` started through reapkit's spawn() is a client; its container
// belongs to the engine. killProcessGracefully and the client's own exit must end the container
// through the engine and confirm it, on every engine that runs here. Before: the client (and its
// group) was stopped, the result said no survivors, and the container ran on (PID 1 ignores SIGTERM;
// with podman the record stayed Up and the name taken).
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { EngineError, killProcessGracefully, spawn, spawnedInfo } from '../lib/index'
import { containerStatus, engineCall, listRun } from '../lib/mechanisms/container/engine'
import { formatOwner, ownerOf } from '../lib/mechanisms/container/owner'
import { clientPath, containerState, containersWith, describeWithEngines, engineRun, enginesSkipReason, testEngines, waitForEngine } from './containers'
import { containerTestContext, DRAINS_ON_TERM, IGNORES_TERM } from './containers-lib'
import { exitOf, spawnFixture } from './helpers'

const skip = enginesSkipReason()

describeWithEngines(`containers: killProcessGracefully and the client's own exit`, skip, () => {
  const t = containerTestContext()

  for (const engine of testEngines()) {
    describe(engine.name, () => {
      it('engine calls: same globals and env; a fractional bound is fine; a failure carries ERR_REAPKIT_ENGINE and stderr; the bound gives ETIMEDOUT', async () => {
        const client = { engine: engine.name, bin: engine.bin, globals: [], env: engine.env }
        expect(await listRun(client, 'no-such-run', { timeoutMs: 10_000.5 })).toEqual([])
        expect(await containerStatus(client, 'reapkit-no-such-container')).toBe('gone')
        const bad = engine.name === 'docker' ? { ...client, globals: ['-H', 'unix:///nonexistent/docker.sock'] } : { ...client, globals: ['--url', 'unix:///nonexistent/podman.sock'] }
        const failed = await listRun(bad, 'x').then(() => null, (err: unknown) => err as EngineError)
        expect(failed).toBeInstanceOf(EngineError)
        expect(failed!.code).toBe('ERR_REAPKIT_ENGINE')
        expect(failed!.stderr).toMatch(/nonexistent/)
        const missing = await listRun({ ...client, bin: '/nonexistent/docker' }, 'x').then(() => null, (err: unknown) => err as EngineError)
        expect(missing?.code).toBe('ERR_REAPKIT_ENGINE')
        // `events` streams until it is killed: the bound must end it (a `ps` with a 1 ms bound could
        // finish while this process was descheduled on a loaded machine, and then it has answered).
        const slow = await engineCall(client, ['events'], 500).then(() => null, (err: unknown) => err as Error & { code: string })
        expect(slow?.code).toBe('ETIMEDOUT')
      })

      it('spawn() labels the run with its id and owner and records how to reach the engine; container: false opts out', async () => {
        const labelled = t.run(engine, ['--rm'], IGNORES_TERM)
        const [id] = await t.running(engine)
        const record = spawnedInfo(labelled)?.container
        expect(record).toMatchObject({ engine: engine.name, bin: engine.bin, globals: [], autoRemove: true, owner: formatOwner(ownerOf()) })
        const labels = JSON.parse(engineRun(engine, ['inspect', '--format', '{{json .Config.Labels}}', id!]).stdout) as Record<string, string>
        expect(labels['reapkit.owner']).toBe(formatOwner(ownerOf()))
        expect(labels['reapkit.run']).toBe(record!.runId)
        const plain = t.run(engine, ['--rm'], ['true'], { container: false })
        expect(spawnedInfo(plain)?.container).toBe(undefined)
        expect(plain.spawnargs.join(' ')).not.toContain('reapkit.run')
        expect(await new Promise((res) => plain.once('exit', res))).toBe(0)
      })

      it("the user's own reapkit.run / reapkit.owner labels (--label, -l, --label-file) do not hide the container: ours win, the stop finds and ends it", async () => {
        const dir = mkdtempSync(join(tmpdir(), 'reapkit-labels-'))
        try {
          const file = join(dir, 'labels')
          writeFileSync(file, 'reapkit.run=from-file\nreapkit.owner=from-file\n')
          const flags = ['--rm', '--label', 'reapkit.run=mine', '-l', 'reapkit.owner=someone', '--label-file', file]
          const child = t.run(engine, flags, IGNORES_TERM)
          const [id] = await t.running(engine)
          const record = spawnedInfo(child)!.container!
          const labels = JSON.parse(engineRun(engine, ['inspect', '--format', '{{json .Config.Labels}}', id!]).stdout) as Record<string, string>
          expect(labels).toMatchObject({ 'reapkit.run': record.runId, 'reapkit.owner': record.owner })
          const result = await killProcessGracefully(child, { graceMs: 1000 })
          expect(result.containers).toEqual([expect.objectContaining({ ids: [id], state: 'gone', stopped: true })])
          expect(containersWith(engine, t.label)).toEqual([])
        } finally {
          rmSync(dir, { recursive: true, force: true })
        }
      })

      it('PID 1 ignoring SIGTERM, --rm: the engine stops it after the grace, and it is confirmed removed', async () => {
        const child = t.run(engine, ['--rm'], IGNORES_TERM)
        const [id] = await t.running(engine)
        const result = await killProcessGracefully(child, { graceMs: 2000 })
        expect(result.containers).toEqual([expect.objectContaining({ engine: engine.name, ids: [id], state: 'gone', stopped: true, survivors: [] })])
        expect(result.containerSurvivors).toEqual([])
        expect(result.uncertain).toBe(false)
        expect(containersWith(engine, t.label)).toEqual([])
      })

      it('a relative program path, then process.chdir(): the record holds the absolute path and working directory, and the stop reaches the engine', async () => {
        const dir = mkdtempSync(join(tmpdir(), 'reapkit-relcwd-'))
        const home = process.cwd()
        let child: ReturnType<typeof spawn> | undefined
        try {
          mkdirSync(join(dir, 'bin'))
          symlinkSync(clientPath(engine), join(dir, 'bin', engine.bin))
          process.chdir(dir)
          child = spawn(`./bin/${engine.bin}`, ['run', '-i', '--rm', '--label', t.label, engine.image, ...IGNORES_TERM], { env: engine.env, stdio: ['pipe', 'ignore', 'ignore'] })
          process.chdir(home) // the program moves on
          const record = spawnedInfo(child)!.container!
          expect(record).toMatchObject({ cwd: dir, bin: join(dir, 'bin', engine.bin) })
          const [id] = await t.running(engine)
          const result = await killProcessGracefully(child, { graceMs: 1000 })
          expect(result.containers).toEqual([expect.objectContaining({ ids: [id], state: 'gone' })])
        } finally {
          process.chdir(home)
          if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
          rmSync(dir, { recursive: true, force: true })
        }
      })

      it('global flags before run (docker -H, podman --log-level) reach every engine call', async () => {
        const env = { ...engine.env }
        delete env.DOCKER_HOST
        const globals = engine.name === 'docker' ? ['-H', engine.env.DOCKER_HOST!] : ['--log-level', 'error']
        const child = spawn(engine.bin, [...globals, 'run', '-i', '--rm', '--label', t.label, engine.image, ...IGNORES_TERM], { env, stdio: ['pipe', 'ignore', 'ignore'] })
        try {
          expect(spawnedInfo(child)?.container?.globals).toEqual(globals)
          const [id] = await t.running(engine)
          const result = await killProcessGracefully(child, { graceMs: 1000 })
          expect(result.containers).toEqual([expect.objectContaining({ ids: [id], state: 'gone' })])
          expect(containersWith(engine, t.label)).toEqual([])
        } finally {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
        }
      })

      it('PID 1 ignoring SIGTERM, no --rm: stopped and confirmed not running; the stopped container stays, as asked', async () => {
        const child = t.run(engine, [], IGNORES_TERM)
        const [id] = await t.running(engine)
        const result = await killProcessGracefully(child, { graceMs: 2000 })
        expect(result.containers).toEqual([expect.objectContaining({ ids: [id], state: 'gone', stopped: true })])
        expect(result.containerSurvivors).toEqual([])
        expect(containerState(engine, id!)).toBe('exited')
      })

      it('PID 1 draining on SIGTERM: it exits from its own trap within the grace (exit 0, not the engine\'s SIGKILL)', async () => {
        const child = t.run(engine, [], DRAINS_ON_TERM)
        const [id] = await t.running(engine)
        const result = await killProcessGracefully(child, { graceMs: 20_000 })
        // Whoever's SIGTERM came first (the engine's stop, or the client's signal proxy forwarding the
        // group's), the container drained and is confirmed gone.
        expect(result.containers).toEqual([expect.objectContaining({ ids: [id], state: 'gone' })])
        expect(result.durationMs).toBeLessThan(15_000)
        expect(containerState(engine, id!)).toBe('exited')
        expect(engineRun(engine, ['inspect', '--format', '{{.State.ExitCode}}', id!]).stdout.trim()).toBe('0')
      })

      it('--name is free again right after the stop: the next run with the same name starts', async () => {
        const name = `reapkit-test-${t.label.slice(-12)}`
        const first = t.run(engine, ['--rm', '--name', name], IGNORES_TERM)
        await t.running(engine)
        const result = await killProcessGracefully(first, { graceMs: 1000 })
        expect(result.containerSurvivors).toEqual([])
        const second = t.run(engine, ['--rm', '--name', name], IGNORES_TERM)
        const [id] = await t.running(engine)
        expect(engineRun(engine, ['inspect', '--format', '{{.Name}}', id!]).stdout.trim().replace(/^\//, '')).toBe(name)
        expect(second.exitCode).toBe(null)
      })

      it('a container that exits by itself: reported gone, nothing stopped, and (no --rm) left as the user asked', async () => {
        const child = t.run(engine, [], ['sh', '-c', 'exit 3'])
        const code = await new Promise<number | null>((res) => child.once('exit', res))
        expect(code).toBe(3)
        const result = await killProcessGracefully(child, { graceMs: 1000 })
        expect(result.containers).toEqual([expect.objectContaining({ state: 'gone', stopped: false })])
        expect(result.containers[0]!.ids).toHaveLength(1)
        expect(containerState(engine, result.containers[0]!.ids[0]!)).toBe('exited')
      })

      for (const mode of ['exit', 'throw'] as const) {
        it(`the host ends by ${mode === 'exit' ? 'process.exit()' : 'an uncaught exception'} with the client running: its 'exit' kills the container through the engine`, async () => {
          const host = spawnFixture('container-host.cjs', [engine.bin, engine.image, t.label, mode], { env: engine.env, stdio: ['pipe', 'ignore', 'ignore'] })
          await t.running(engine)
          host.stdin!.write('go\n')
          expect((await exitOf(host, 30_000)).code).toBe(mode === 'exit' ? 0 : 1)
          await waitForEngine(() => containersWith(engine, t.label).length === 0, 30_000, 'the container to be removed')
        })
      }

      it("the client SIGKILLed, and the host's exit handler then ends the host: the backstop still kills the container (its step was under way)", async () => {
        const host = spawnFixture('container-host.cjs', [engine.bin, engine.image, t.label, 'client-exit'], { env: engine.env, stdio: ['ignore', 'pipe', 'ignore'] })
        let out = ''
        host.stdout!.on('data', (d: Buffer) => (out += String(d)))
        await t.running(engine)
        await waitForEngine(() => /^\d+\n/.test(out), 10_000, 'the client pid')
        process.kill(Number(out.trim()), 'SIGKILL') // the client this test's host started
        expect((await exitOf(host, 30_000)).code).toBe(1)
        await waitForEngine(() => containersWith(engine, t.label, false).length === 0, 20_000, 'the container to stop')
      })

      it("a worker thread's process.exit() kills only that worker's containers; the process's exit then kills the main thread's and a live worker's", async () => {
        const host = spawnFixture('container-host.cjs', [engine.bin, engine.image, t.label, 'worker'], { env: engine.env, stdio: ['pipe', 'pipe', 'ignore'] })
        let out = ''
        host.stdout!.on('data', (d: Buffer) => (out += String(d)))
        const who = (w: string): string[] => containersWith(engine, `who=${w}`, false).filter((id) => containersWith(engine, t.label, false).includes(id))
        await t.running(engine, 2) // main's and the first worker's
        expect(who('worker')).toHaveLength(1)
        host.stdin!.write('worker\n')
        await waitForEngine(() => out.includes('worker2-started'), 60_000, 'the second worker')
        await waitForEngine(() => who('worker2').length === 1, 60_000, "the second worker's container")
        expect(who('worker')).toEqual([]) // gone with its worker's exit
        expect(who('main')).toHaveLength(1)
        expect(who('worker2')).toHaveLength(1)
        host.stdin!.write('go\n')
        expect((await exitOf(host, 30_000)).code).toBe(0)
        await waitForEngine(() => containersWith(engine, t.label, false).length === 0, 20_000, 'the containers to stop')
      }, 120_000)

      it('the client SIGKILLed by someone else: its own exit stops the container through the engine', async () => {
        const saved = process.env.REAPKIT_KILL_GRACE_MS
        process.env.REAPKIT_KILL_GRACE_MS = '1000' // the own-exit step's grace
        try {
          const child = t.run(engine, ['--rm'], IGNORES_TERM)
          await t.running(engine)
          process.kill(child.pid!, 'SIGKILL')
          await waitForEngine(() => containersWith(engine, t.label).length === 0, 45_000, 'the container to be removed')
        } finally {
          if (saved === undefined) delete process.env.REAPKIT_KILL_GRACE_MS
          else process.env.REAPKIT_KILL_GRACE_MS = saved
        }
      })
    })
  }
})
