// Issue 18: the engine stops answering in the middle of a stop. The outcome must say 'uncertain'
// with the engine's error, never "gone" and never "no survivors". The shared daemons are never
// touched: each test starts an engine endpoint of its own and stops it mid-stop:
// - docker: a second private dockerd (its own --data-root, --exec-root and socket under a tmp dir);
// - podman: a private `podman system service` socket, the run going through `podman --url` (the
//   container itself lives in the local store, which the cleanup uses).
// Before: killProcessGracefully reported the client's group gone and nothing about the container.
import { type ChildProcess, spawn as nodeSpawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { killProcessGracefully, spawn, spawnedInfo } from '../lib/index'
import { stopRecordedContainer } from '../lib/mechanisms/container/child'
import { containersWith, describeWithEngines, enginesSkipReason, removeLabelledAndWait, type TestEngine, testEngines, testLabel, waitForEngine } from './containers'
import { IGNORES_TERM } from './containers-lib'

const skip = enginesSkipReason()
const ROOTFS = join(process.env.REAPKIT_ENGINES_DIR ?? '/tmp/reapkit-engines', 'rootfs')

interface PrivateEndpoint {
  /** The global flags and environment that reach it. */
  globals: string[]
  env: NodeJS.ProcessEnv
  /** Stops answering (SIGTERM to the daemon or service). */
  stop(): void
  /** Waits (bounded) for it to be gone, SIGKILLs its group if not, removes its files. */
  dispose(): Promise<void>
}

function startDetached(command: string, args: string[]): ChildProcess {
  return nodeSpawn(command, args, { detached: true, stdio: 'ignore' })
}

async function disposeOf(proc: ChildProcess, dir: string): Promise<void> {
  if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM')
  const exited = await Promise.race([
    new Promise<boolean>((res) => (proc.exitCode !== null || proc.signalCode !== null ? res(true) : proc.once('exit', () => res(true)))),
    new Promise<boolean>((res) => setTimeout(res, 60_000, false)),
  ])
  if (!exited) {
    try {
      process.kill(-proc.pid!, 'SIGKILL')
    } catch {
      // gone meanwhile
    }
  }
  rmSync(dir, { recursive: true, force: true })
}

/** A second dockerd of this test's own, with the test image imported. */
async function privateDockerd(): Promise<PrivateEndpoint> {
  const dir = mkdtempSync('/tmp/rk-d2-')
  const host = `unix://${dir}/docker.sock`
  const proc = startDetached('dockerd', ['--iptables=false', '--ip6tables=false', '--bridge=none', '--data-root', `${dir}/data`, '--exec-root', `${dir}/exec`, '-H', host, '--pidfile', `${dir}/pid`])
  const env = { ...process.env, DOCKER_HOST: host }
  const endpoint: PrivateEndpoint = { globals: [], env, stop: () => proc.kill('SIGTERM'), dispose: () => disposeOf(proc, dir) }
  try {
    await waitForEngine(() => spawnSync('docker', ['version'], { env, timeout: 10_000 }).status === 0, 60_000, 'the private dockerd')
    const imported = spawnSync('sh', ['-c', `tar -C '${ROOTFS}' -c . | docker import - reapkit-test/busybox`], { env, timeout: 60_000 })
    if (imported.status !== 0) throw new Error(`docker import failed: ${imported.stderr}`)
  } catch (err) {
    await endpoint.dispose()
    throw err
  }
  return endpoint
}

/** A private podman API service, reached with `podman --url`. */
async function privatePodmanService(): Promise<PrivateEndpoint> {
  const dir = mkdtempSync('/tmp/rk-ps-')
  const url = `unix://${dir}/podman.sock`
  const proc = startDetached('podman', ['system', 'service', '--time=0', url])
  const endpoint: PrivateEndpoint = { globals: ['--url', url], env: { ...process.env }, stop: () => proc.kill('SIGTERM'), dispose: () => disposeOf(proc, dir) }
  try {
    await waitForEngine(() => spawnSync('podman', ['--url', url, 'version'], { timeout: 10_000 }).status === 0, 60_000, 'the private podman service')
  } catch (err) {
    await endpoint.dispose()
    throw err
  }
  return endpoint
}

describeWithEngines('containers: the engine unreachable in the middle of a stop', skip, () => {
  for (const engine of testEngines()) {
    it(`${engine.name}: the outcome is uncertain with the engine's error, the container a survivor, never "gone"`, async () => {
      const label = testLabel()
      const endpoint = engine.name === 'docker' ? await privateDockerd() : await privatePodmanService()
      // Where the test itself looks: the private dockerd, or podman's local store (the service's too).
      const local: TestEngine = engine.name === 'docker' ? { ...engine, env: endpoint.env } : engine
      let child: ChildProcess | undefined
      let ids: string[] = []
      try {
        child = spawn(engine.bin, [...endpoint.globals, 'run', '-i', '--rm', '--label', label, engine.image, ...IGNORES_TERM], { env: endpoint.env, stdio: ['pipe', 'ignore', 'ignore'] })
        expect(spawnedInfo(child)?.container?.globals).toEqual(endpoint.globals)
        await waitForEngine(() => (ids = containersWith(local, label, false)).length === 1, 60_000, 'the container to run')
        const stopping = killProcessGracefully(child, { graceMs: 4000, confirmMs: 2000 })
        await new Promise((res) => setTimeout(res, 1000)) // the engine's stop is under way
        endpoint.stop()
        const result = await stopping
        expect(result.containers).toHaveLength(1)
        const outcome = result.containers[0]!
        expect(outcome.state).toBe('uncertain')
        expect(outcome.ids).toEqual(ids)
        expect((outcome.error as { code?: string } | undefined)?.code).toMatch(/^(ERR_REAPKIT_ENGINE|ETIMEDOUT)$/)
        expect(result.uncertain).toBe(true)
        expect(result.error).toBe(outcome.error)
        expect(result.containerSurvivors).toEqual(ids)
      } finally {
        if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
        const record = child && spawnedInfo(child)?.container
        if (record) await stopRecordedContainer(record, { graceMs: 0, confirmMs: 1000 }) // joins the own-exit step, if any
        // Podman's local store (a private dockerd's containers go with its folder): by the label, its conmon waited for.
        if (engine.name === 'podman') await removeLabelledAndWait(engine, label, { ids })
        await endpoint.dispose()
      }
    }, 240_000)
  }
})
