// What the library's container tests share: a client spawned through reapkit's spawn() with the
// test's own label, waits on the engine, and the cleanup (the library's own container step first,
// joining any step under way so no engine call outlives the test, then removal by the test's label).
import type { ChildProcess } from 'node:child_process'
import { afterEach, beforeEach } from 'vitest'
import { spawn, spawnedInfo, type SpawnOptions } from '../lib/index'
import { stopRecordedContainer } from '../lib/mechanisms/container/child'
import { containersWith, removeLabelledAndWait, testEngines, testLabel, type TestEngine, waitForEngine } from './containers'

/** Busybox's `sleep` as PID 1: no handler, so SIGTERM is ignored (the common leak). */
export const IGNORES_TERM = ['sleep', '1000']
/** A PID 1 that drains on SIGTERM: exits 0 from its trap. */
export const DRAINS_ON_TERM = ['sh', '-c', 'trap "exit 0" TERM; while :; do sleep 0.1; done']

export interface ContainerTestContext {
  /** This test's label (`reapkit.test=<uuid>`). */
  readonly label: string
  /** Spawns `<engine> run -i --label <label> <flags> <image> <cmd>` through reapkit's spawn(). */
  run(engine: TestEngine, flags: string[], cmd: string[], options?: SpawnOptions): ChildProcess
  /** Waits (bounded) until exactly `count` containers of this test run, and returns their ids. */
  running(engine: TestEngine, count?: number, timeoutMs?: number): Promise<string[]>
}

/** Installs the per-test label and cleanup; call inside a describe. */
export function containerTestContext(): ContainerTestContext {
  let label = ''
  const clients: ChildProcess[] = []
  beforeEach(() => {
    label = testLabel()
  })
  afterEach(async () => {
    for (const c of clients) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
    await Promise.all(
      clients.map((c) => {
        const record = spawnedInfo(c)?.container
        return record ? stopRecordedContainer(record, { graceMs: 0, confirmMs: 5000 }) : undefined
      }),
    )
    clients.length = 0
    for (const engine of testEngines()) await removeLabelledAndWait(engine, label)
  })
  return {
    get label() {
      return label
    },
    run(engine, flags, cmd, options = {}) {
      const child = spawn(engine.bin, ['run', '-i', '--label', label, ...flags, engine.image, ...cmd], {
        env: engine.env,
        stdio: ['pipe', 'ignore', 'ignore'],
        ...options,
      })
      clients.push(child)
      return child
    },
    async running(engine, count = 1, timeoutMs = 60_000) {
      let ids: string[] = []
      await waitForEngine(() => (ids = containersWith(engine, label, false)).length === count, timeoutMs, `${count} running ${engine.name} container(s)`)
      return ids
    },
  }
}
