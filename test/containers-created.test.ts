// A container never started (docker's and podman's `created`) is at rest only when two looks in a
// row find it so: `docker run` is a create and then a start, and a stop that looks between the two
// must not call the run gone while the start is on its way. Here the client is a `docker`/`podman`
// on PATH (a shell script, the input under test) whose `run` is the real `create` alone (then it
// waits, as a client between its two halves); the start comes from the engine calls of the stop
// itself: the first look's `inspect` is answered with what the real one said (`created`), but the
// container is started before that answer is given. Every other call is the real client's.
// Before: the stop's first look saw `created`, counted it at rest and reported the run 'gone',
// while the container ran on (its PID 1 running).
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { killProcessGracefully, spawnedInfo } from '../lib/index'
import { stopContainerRun } from '../lib/mechanisms/container/stop'
import { containerState, containersWith, describeWithEngines, enginesSkipReason, type TestEngine, testEngines, waitForEngine } from './containers'
import { containerTestContext, IGNORES_TERM } from './containers-lib'
import { writeFakeEngine } from './fake-engine'

const skip = enginesSkipReason()

/**
 * A client whose `run` creates only (then sleeps, as a client waiting to start), and whose first
 * `inspect` of a `created` container starts it before giving the answer it had: the container is
 * started right after the stop's look saw it `created`.
 */
function startsAfterTheLook(engine: TestEngine): { env: NodeJS.ProcessEnv; started: () => boolean; dispose: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'reapkit-created-engine-'))
  const marker = join(dir, 'started')
  const fake = writeFakeEngine(dir, {
    bin: engine.bin,
    passTo: engine,
    calls: {
      run: { sh: 'shift; "$real" create "$@" >/dev/null || exit 1; exec sleep 1000' },
      inspect: {
        sh: [
          `if [ ! -e '${marker}' ]; then`,
          '  out=$("$real" "$@"); rc=$?',
          `  if [ "$out" = created ]; then : > '${marker}'; for id; do :; done; "$real" start "$id" >/dev/null; fi`,
          '  printf "%s\\n" "$out"; exit $rc',
          'fi',
        ].join('\n'),
      },
    },
  })
  return { env: fake.env, started: () => existsSync(marker), dispose: fake.dispose }
}

/**
 * A client whose `run` creates nothing (it keeps its arguments, then sleeps), and whose first `ps`
 * answers what the real one said (nothing), then creates the run's container: a create the engine
 * finishes after the stop's first look, as one whose client was killed in the middle of it.
 */
function createsAfterTheLook(engine: TestEngine): { env: NodeJS.ProcessEnv; asked: () => boolean; created: () => boolean; dispose: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'reapkit-late-engine-'))
  const args = join(dir, 'args')
  const marker = join(dir, 'created')
  const fake = writeFakeEngine(dir, {
    bin: engine.bin,
    passTo: engine,
    calls: {
      run: { sh: `shift; echo "$@" > '${args}'; exec sleep 1000` },
      ps: {
        sh: [
          `if [ -e '${args}' ] && [ ! -e '${marker}' ]; then`,
          '  out=$("$real" "$@"); rc=$?',
          `  : > '${marker}'; "$real" create $(cat '${args}') >/dev/null`,
          '  printf "%s" "$out"; exit $rc',
          'fi',
        ].join('\n'),
      },
    },
  })
  return { env: fake.env, asked: () => existsSync(args), created: () => existsSync(marker), dispose: fake.dispose }
}

/** A client whose `run` is the real `create` alone, then waits as a client between its two halves: the container is never started. */
function createsOnly(engine: TestEngine): { env: NodeJS.ProcessEnv; dispose: () => void } {
  return writeFakeEngine(mkdtempSync(join(tmpdir(), 'reapkit-create-only-')), {
    bin: engine.bin,
    passTo: engine,
    calls: { run: { sh: 'shift; "$real" create "$@" >/dev/null || exit 1; exec sleep 1000' } },
  })
}

describeWithEngines(`containers: a container seen 'created' once is not at rest`, skip, () => {
  const t = containerTestContext()

  for (const engine of testEngines()) {
    it(`${engine.name}, no --rm: a container started right after the stop's look saw it 'created' is stopped, not called gone`, async () => {
      const fake = startsAfterTheLook(engine)
      try {
        const child = t.run(engine, [], IGNORES_TERM, { env: fake.env })
        let ids: string[] = []
        await waitForEngine(() => (ids = containersWith(engine, t.label)).length === 1, 60_000, `the ${engine.name} container created`)
        expect(containerState(engine, ids[0]!)).toBe('created')
        const result = await killProcessGracefully(child, { graceMs: 2000, confirmMs: 8000 })
        expect(fake.started()).toBe(true) // the stop's look saw it 'created', and it was started right after
        const state = containerState(engine, ids[0]!)
        expect(result.containers).toEqual([expect.objectContaining({ ids, state: 'gone', survivors: [] })])
        expect(state).not.toBe('running') // before: 'running' (its PID 1 too) while the stop said 'gone'; the cleanup removes it by the test's label
        expect(result.uncertain).toBe(false)
      } finally {
        fake.dispose()
      }
    }, 120_000)

    it(`${engine.name}: a never-started container that a confirm window lets be seen once only is uncertain, not a survivor`, async () => {
      const fake = createsOnly(engine)
      try {
        const child = t.run(engine, [], IGNORES_TERM, { env: fake.env })
        let ids: string[] = []
        await waitForEngine(() => (ids = containersWith(engine, t.label)).length === 1, 60_000, `the ${engine.name} container created`)
        const record = spawnedInfo(child)!.container!
        const outcome = await stopContainerRun(record, { graceMs: 0, confirmMs: 300, ids })
        // before: 'survived', naming a container that never ran
        expect(outcome).toMatchObject({ state: 'uncertain', survivors: ids, error: expect.objectContaining({ code: 'ERR_REAPKIT_CONTAINER_UNSETTLED' }) })
        expect(containerState(engine, ids[0]!)).toBe('created')
        const longer = await stopContainerRun(record, { graceMs: 0, confirmMs: 8000, ids })
        expect(longer).toMatchObject({ state: 'gone', survivors: [] }) // two looks fit: at rest
      } finally {
        fake.dispose()
      }
    }, 120_000)

    it(`${engine.name}: a container created after the stop's first look found none is found by the second and removed ('created', never started)`, async () => {
      const fake = createsAfterTheLook(engine)
      try {
        const child = t.run(engine, [], IGNORES_TERM, { env: fake.env })
        await waitForEngine(fake.asked, 30_000, 'the client to be asked to run')
        const result = await killProcessGracefully(child, { graceMs: 3000, confirmMs: 8000 })
        expect(fake.created()).toBe(true) // the stop's first look found nothing, and the container was created right after
        expect(result.containers).toEqual([expect.objectContaining({ state: 'gone', survivors: [] })])
        expect(result.containers[0]!.ids).toHaveLength(1) // the second look found it
        expect(containersWith(engine, t.label)).toEqual([]) // removed, not left 'created' to be started later
        expect(result.uncertain).toBe(false)
      } finally {
        fake.dispose()
      }
    }, 120_000)
  }
})
