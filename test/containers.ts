// Container engines for the tests (issue 18): the private dockerd and the podman that
// scripts/containers/setup.sh prepared (its env file says which are ready; none means skip, with
// the reason). Every container a test makes carries the test's own label, and cleanup removes by
// that label only: never by name, image or any pattern over all containers.
import { randomUUID } from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'vitest'
import { liveProcesses } from './helpers'

export type EngineName = 'docker' | 'podman'

export interface TestEngine {
  name: EngineName
  /** The client binary, as a host would name it. */
  bin: EngineName
  /** The environment the client needs (DOCKER_HOST for the private dockerd). */
  env: NodeJS.ProcessEnv
  /** The image setup.sh imported: busybox with sh, sleep, cat, echo, trap... */
  image: string
}

const ENV_FILE = join(process.env.REAPKIT_ENGINES_DIR ?? '/tmp/reapkit-engines', 'engines.env')

function readEnvFile(): Record<string, string> {
  if (!existsSync(ENV_FILE)) return {}
  const out: Record<string, string> = {}
  for (const line of readFileSync(ENV_FILE, 'utf8').split('\n')) {
    const eq = line.indexOf('=')
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1)
  }
  return out
}

/** The engines that can run a container here (empty when setup.sh was not run or none started). */
export function testEngines(): TestEngine[] {
  if (process.platform !== 'linux') return []
  const vars = readEnvFile()
  const image = vars.REAPKIT_TEST_IMAGE ?? 'reapkit-test/busybox'
  const engines: TestEngine[] = []
  if (vars.REAPKIT_TEST_DOCKER_HOST) {
    engines.push({ name: 'docker', bin: 'docker', env: { ...process.env, DOCKER_HOST: vars.REAPKIT_TEST_DOCKER_HOST }, image })
  }
  if (vars.REAPKIT_TEST_PODMAN === '1') engines.push({ name: 'podman', bin: 'podman', env: { ...process.env }, image })
  return engines
}

/** Why the container tests skip, or null when at least one engine is ready. */
export function enginesSkipReason(): string | null {
  if (process.platform !== 'linux') return 'container engines are tested on Linux'
  if (!existsSync(ENV_FILE)) return `no ${ENV_FILE}: run scripts/containers/setup.sh`
  return testEngines().length > 0 ? null : `neither engine started (see ${ENV_FILE}'s directory for the logs)`
}

/**
 * A block of tests that need an engine: where `skip` (enginesSkipReason(), or a narrower reason)
 * says none is ready, skipped with the reason in its title. The body still runs to collect the
 * tests, so it must not touch an engine. A test stands for the block's own: a block whose tests
 * are made per engine (`for (const engine of testEngines())`) has none without one, and a run
 * would list it with no test and no word of why.
 */
export function describeWithEngines(title: string, skip: string | null, body: () => void): void {
  describe.skipIf(skip !== null)(skip === null ? title : `${title} (skipped: ${skip})`, () => {
    if (skip !== null) it.skip('needs a container engine')
    body()
  })
}

/** Runs the engine's client to completion, bounded (30 s). */
export function engineRun(engine: TestEngine, args: string[], timeoutMs = 30_000): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(engine.bin, args, { env: engine.env, encoding: 'utf8', timeout: timeoutMs })
  return { code: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' }
}

/** A fresh label for one test's containers: `reapkit.test=<uuid>`. Pass it as `--label` to every run. */
export function testLabel(): string {
  return `reapkit.test=${randomUUID()}`
}

/** Ids of the containers with this label; `all` includes stopped ones. */
export function containersWith(engine: TestEngine, label: string, all = true): string[] {
  const r = engineRun(engine, ['ps', ...(all ? ['-a'] : []), '-q', '--no-trunc', '--filter', `label=${label}`])
  if (r.code !== 0) throw new Error(`${engine.name} ps failed: ${r.stderr.trim()}`)
  return r.stdout.split('\n').filter(Boolean)
}

/** The container's state as the engine reports it: 'running', 'exited', 'created'..., or 'gone'. */
export function containerState(engine: TestEngine, id: string): string {
  const r = engineRun(engine, ['inspect', '--format', '{{.State.Status}}', id])
  return r.code === 0 ? r.stdout.trim() : 'gone'
}

/** Removes (force) every container with this label; returns how many there were. Cleanup only. */
export function removeLabelled(engine: TestEngine, label: string): number {
  const ids = containersWith(engine, label)
  if (ids.length > 0) engineRun(engine, ['rm', '-f', ...ids])
  return ids.length
}

/** Where the engine's client is on its environment's PATH (what a host running `docker` would run). */
export function clientPath(engine: TestEngine): string {
  return spawnSync('sh', ['-c', `command -v ${engine.bin}`], { env: engine.env, encoding: 'utf8' }).stdout.trim()
}

export interface RemoveOptions {
  /** Ids this test knew besides the listed ones: a container removed already may have a conmon still exiting. */
  ids?: readonly string[]
  /** Processes that adopt podman's conmons (this process, a subreaper, is always one): hosts of the test's own. */
  conmonParents?: readonly number[]
  timeoutMs?: number
}

/**
 * Removes this test's containers (by its label only) at once, and waits (bounded) until they are
 * gone with their processes. With podman: killed first (podman 4's `rm -f` of a container left
 * 'stopping' drops its record and leaves its processes running), removed without its 10 s stop,
 * then its conmons are waited for: this process (the leak guard makes each test a subreaper), or a
 * host of the test's, adopted them and they exit a moment after their container; the guard would
 * count one still running as a leak.
 */
export async function removeLabelledAndWait(engine: TestEngine, label: string, options: RemoveOptions = {}): Promise<void> {
  const ids = containersWith(engine, label)
  if (engine.name !== 'podman') return void (ids.length > 0 && engineRun(engine, ['rm', '-f', ...ids]))
  if (ids.length > 0) engineRun(engine, ['kill', ...ids])
  const known = [...ids, ...(options.ids ?? [])]
  const parents = new Set([process.pid, ...(options.conmonParents ?? [])])
  // podman's `rm -f` fails (and says so only on stderr) while the engine is still ending a container
  // (its kill, a podman service's own cleanup): asked again until none with the label is left.
  const removed = (): boolean => {
    const left = containersWith(engine, label)
    if (left.length > 0) engineRun(engine, ['rm', '-f', '-t', '0', ...left])
    return left.length === 0
  }
  await waitForEngine(() => removed() && conmonsOf(parents).length === 0 && !processNaming(known), options.timeoutMs ?? 30_000, "the labelled containers to be removed and their conmons to exit")
}

/** The live conmons podman left as children of `parents` (this process, a subreaper, and hosts of a test's): they end once their container is removed. */
export function conmonsOf(parents: ReadonlySet<number>): number[] {
  return liveProcesses()
    .filter((p) => parents.has(Number(p.fields[1])) && p.comm === 'conmon')
    .map((p) => p.pid)
}

/** Whether a live process's command line names one of `ids` (podman's conmon names its container, whoever adopted it). */
function processNaming(ids: readonly string[]): boolean {
  if (ids.length === 0) return false
  return liveProcesses().some((p) => {
    try {
      const cmdline = readFileSync(`/proc/${p.pid}/cmdline`, 'latin1')
      return ids.some((id) => cmdline.includes(id))
    } catch {
      return false // gone meanwhile
    }
  })
}

/** Waits (bounded) until `predicate` holds, polling the engine every 100 ms. */
export async function waitForEngine(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}
