// The wrapper (`reapkit -- podman run -i ...`, native/supervise/engine.c and looks.c) when podman's
// record of the container says 'stopping': PID 1 runs on, though `ps` without -a no longer lists it.
// It gets there when the engine's stop is cut short (its client killed mid-stop, as the wrapper's own
// bound does to a stop that does not answer in time). Here PID 1 ignores SIGTERM, and a `podman`
// client on PATH (test/fake-engine.ts, the input under test) cuts its `stop` short once the container
// is 'stopping', makes its `kill` slow (1 s) or fail, records its kill and rm calls, and passes every
// other call to the real podman (test/containers-stopping.test.ts does the same for the library's stop).
// Before:
// - no --rm: the confirm after the stop listed running containers only (`ps -q`), did not see the
//   'stopping' one and reported it gone at once, its PID 1 running (the wrapper's own SIGKILL of what
//   it adopted ended it seconds later, podman's record left 'stopping');
// - --rm, a kill that failed: `rm -f -t 0` came right after it, dropped the record of the 'stopping'
//   container and left PID 1 running; the wrapper said gone and exited with the client's status.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { containerState, containersWith, describeWithEngines, engineRun, enginesSkipReason, removeLabelledAndWait, type TestEngine, testEngines, testLabel, waitForEngine } from './containers'
import { IGNORES_TERM } from './containers-lib'
import { type FakeCall, writeFakeEngine } from './fake-engine'
import { exitOf, isGone, jsonLines, procStat, ROOT, spawnGroup, trackGroup } from './helpers'

const BIN = join(ROOT, 'bin', 'reapkit')
const podman = testEngines().find((e) => e.name === 'podman')
const skip = enginesSkipReason() ?? (podman ? null : 'no podman engine')
// The grace is long: the wrapper's own stop of what it adopted (SIGKILL at the grace's end, PID 1
// among them: it descends from the adopted conmon) must come well after any verdict on the container.
const STOP = ['--verbose', '--close-timeout', '300', '--grace', '10000']
const ENGINE_BOUND = 45_000 // a container to start, or the wrapper's stop and confirms, on a busy two-core machine

/** The engine's stop, given 60 s rather than the wrapper's time, SIGKILLed once the container is 'stopping' (then it fails). */
const STOP_CUT_SHORT = `shift 3
    "$real" stop --time 60 "$@" &
    stopper=$!
    i=0
    while [ "$("$real" inspect --format '{{.State.Status}}' "$1")" != stopping ] && [ $i -lt 150 ]; do sleep 0.2; i=$((i + 1)); done
    kill -9 $stopper
    wait $stopper
    echo "Error: the stop was cut short" >&2
    exit 125`

/**
 * A `podman` whose `stop` is cut short (STOP_CUT_SHORT), whose `kill` answers 1 s late ('slow') or
 * fails ('fail'), and which appends the argv of each kill and rm to `calls`; every other call (and a
 * slow kill, an rm) goes on to the real one.
 */
function podmanCutShort(engine: TestEngine, kill: 'slow' | 'fail') {
  const dir = mkdtempSync(join(tmpdir(), 'reapkit-stopping-engine-'))
  const log = join(dir, 'calls.log')
  const record = `echo "$*" >> '${log}'`
  const calls: Record<string, FakeCall> = {
    stop: { sh: STOP_CUT_SHORT },
    kill: { sh: kill === 'slow' ? `${record}; sleep 1` : `${record}; echo "Error: kill failed" >&2; exit 125` },
    rm: { sh: record },
  }
  const fake = writeFakeEngine(dir, { bin: 'podman', calls, passTo: engine })
  return { ...fake, calls: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []) }
}

describeWithEngines(`reapkit -- podman run: a container 'stopping' is not gone`, skip, () => {
  const engine = podman!
  let label = ''
  beforeEach(() => {
    label = testLabel()
  })
  afterEach(async () => {
    await removeLabelledAndWait(engine, label)
  })

  interface Run {
    w: ReturnType<typeof spawnGroup>
    events: ReturnType<typeof jsonLines>
    id: string
    /** Whether the container's PID 1 still runs (its pid, while its start time matches). */
    pid1Runs: () => boolean
    calls: () => string[]
  }

  /** The wrapper on `podman run -i [flags] IMAGE sleep 1000` through the fake; whatever happens, PID 1 (this test's own) is killed after. */
  async function withWrapper(flags: string[], kill: 'slow' | 'fail', test: (run: Run) => Promise<void>): Promise<void> {
    const fake = podmanCutShort(engine, kill)
    let pid1 = 0
    let start: string | undefined
    const pid1Runs = () => pid1 > 0 && !isGone(pid1) && start !== undefined && procStat(pid1)?.[19] === start
    try {
      const argv = [...STOP, '--', 'podman', 'run', '-i', ...flags, '--label', label, engine.image, ...IGNORES_TERM]
      const w = spawnGroup(BIN, argv, { stdio: ['pipe', 'pipe', 'pipe'], env: fake.env })
      const events = jsonLines(w.stderr!)
      trackGroup((await events.next((m) => m.event === 'start', 10_000, 'the wrapper to start')).pgid)
      await waitForEngine(() => containersWith(engine, label, false).length === 1, ENGINE_BOUND, 'the container to run')
      const [id] = containersWith(engine, label)
      pid1 = Number(engineRun(engine, ['inspect', '--format', '{{.State.Pid}}', id!]).stdout.trim())
      start = procStat(pid1)?.[19] // its start time: the pid names this container's PID 1 only while it matches
      expect(start).toBeDefined()
      await test({ w, events, id: id!, pid1Runs, calls: fake.calls })
    } finally {
      if (pid1Runs()) process.kill(pid1, 'SIGKILL')
      fake.dispose()
    }
  }

  /** The wrapper's verdict on the container: the first container-gone or container-left event. */
  const verdict = (events: Run['events']) =>
    events.next((m) => m.event === 'container-gone' || m.event === 'container-left', ENGINE_BOUND, "the wrapper's verdict on the container")

  it("no --rm, the engine's stop cut short and its kill slow: gone is reported only once PID 1 has exited, by the engine's kill", { timeout: 150_000 }, async () => {
    await withWrapper([], 'slow', async ({ w, events, id, pid1Runs, calls }) => {
      w.kill('SIGTERM')
      const said = await verdict(events)
      const ranOn = pid1Runs() // right when the wrapper said so
      expect(said.event).toBe('container-gone')
      expect(ranOn, 'PID 1 still ran when the wrapper reported its container gone').toBe(false) // before: it ran on
      expect(calls().filter((c) => c.startsWith('kill ')), 'the engine ended it').toEqual([`kill ${id}`])
      expect(['exited', 'stopped']).toContain(containerState(engine, id)) // at rest, its record kept (no --rm)
      const { code } = await exitOf(w, ENGINE_BOUND)
      expect(code).not.toBe(123)
    })
  })

  it("--rm, the engine's stop cut short and its kill failing: left (exit 123, the engine's error on stderr), never removed while 'stopping'", { timeout: 150_000 }, async () => {
    await withWrapper(['--rm'], 'fail', async ({ w, events, id, calls }) => {
      w.kill('SIGTERM')
      const said = await verdict(events)
      expect(said).toMatchObject({ event: 'container-left', containers: 1 }) // before: container-gone
      expect(containerState(engine, id), 'its record kept').toBe('stopping')
      const { code } = await exitOf(w, ENGINE_BOUND)
      expect(code).toBe(123) // before: the client's status
      const left = events.seen.find((m) => typeof m.raw === 'string' && m.raw.startsWith(`reapkit: container ${id} (podman) is still running (stopping)`))
      expect(left?.raw, 'named on stderr with the kill\'s error').toMatch(/kill: Error: kill failed$/)
      expect(calls().filter((c) => c.startsWith('kill ')), 'killed once').toEqual([`kill ${id}`])
      expect(calls().filter((c) => c.startsWith('rm ')), 'never rm -f while stopping').toEqual([]) // before: rm -f -t 0 <id>
    })
  })
})

/** A wrapper on `<engine> run -i [flags] IMAGE <IGNORES_TERM>` through a fake client, SIGTERMed once its container is listed. */
interface Stopped {
  id: string
  /** The container's state right when the wrapper gave its verdict. */
  stateAtVerdict: string
  verdict: string
  code: number | null
  stderr: string[]
  calls: string[]
}

/** The fake's calls are logged (argv, one line each) to `calls.log` in its folder, which `sh` lines may also use (`$dir`). */
async function stopThroughFake(engine: TestEngine, label: string, calls: Record<string, string>, flags: string[] = []): Promise<Stopped> {
  const dir = mkdtempSync(join(tmpdir(), 'reapkit-wrapper-fake-'))
  const log = join(dir, 'calls.log')
  const logged = (sh: string): FakeCall => ({ sh: `dir='${dir}'; echo "$*" >> '${log}'\n${sh}` })
  const all = { stop: '', kill: '', rm: '', ...calls } // (each logged, then as given: an empty one goes on to the real client)
  const fake = writeFakeEngine(dir, { bin: engine.bin, passTo: engine, calls: Object.fromEntries(Object.entries(all).map(([k, v]) => [k, logged(v)])) })
  try {
    const argv = ['--verbose', '--close-timeout', '300', '--grace', '2000', '--', engine.bin, 'run', '-i', ...flags, '--label', label, engine.image, ...IGNORES_TERM]
    const w = spawnGroup(BIN, argv, { stdio: ['pipe', 'pipe', 'pipe'], env: fake.env })
    const events = jsonLines(w.stderr!)
    trackGroup((await events.next((m) => m.event === 'start', 10_000, 'the wrapper to start')).pgid)
    await waitForEngine(() => containersWith(engine, label).length === 1, ENGINE_BOUND, 'the container to be created')
    const [id] = containersWith(engine, label)
    w.kill('SIGTERM')
    const said = await events.next((m) => m.event === 'container-gone' || m.event === 'container-left', ENGINE_BOUND, "the wrapper's verdict")
    const stateAtVerdict = containerState(engine, id!)
    const { code } = await exitOf(w, ENGINE_BOUND)
    const stderr = events.seen.filter((m) => typeof m.raw === 'string').map((m) => m.raw as string)
    return { id: id!, stateAtVerdict, verdict: said.event, code, stderr, calls: existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [] }
  } finally {
    fake.dispose()
  }
}

/** A `run` that is the real `create` alone: the client then waits, as one between its two halves. */
const CREATE_ONLY = 'shift; "$real" create "$@" >/dev/null || exit 1; exec sleep 1000'
/** The Nth state look (`inspect`) starts the container right after the real engine said 'created', and answers that. */
const startAtInspect = (n: number): string => `n=$(($(cat "$dir/inspects" 2>/dev/null || echo 0) + 1)); echo $n > "$dir/inspects"
if [ $n = ${n} ]; then
  out=$("$real" "$@"); rc=$?
  if [ "$out" = created ]; then for id; do :; done; "$real" start "$id" >/dev/null; : > "$dir/started"; fi
  printf "%s\n" "$out"; exit $rc
fi`

describeWithEngines('reapkit -- docker|podman run: never-started containers, failed looks, failed removals', enginesSkipReason(), () => {
  let label = ''
  beforeEach(() => {
    label = testLabel()
  })
  for (const engine of testEngines()) {
    afterEach(async () => {
      await removeLabelledAndWait(engine, label)
    })

    // A `run` is a create, then a start: a look between the two sees 'created'. The wrapper's second
    // state look (the first is the stop's own look, the second its confirm's) starts the container.
    // Before: the confirm counted 'created' at rest on that one look and said gone, the container running.
    it(`${engine.name}: a container started right after a look saw it 'created' is stopped before the wrapper says gone`, { timeout: 150_000 }, async () => {
      const r = await stopThroughFake(engine, label, { run: CREATE_ONLY, inspect: startAtInspect(2) })
      expect(r.calls.filter((c) => c.startsWith('inspect')).length).toBeGreaterThanOrEqual(2)
      expect(r.verdict).toBe('container-gone')
      expect(r.stateAtVerdict, 'running when the wrapper said gone').not.toBe('running') // before: 'running'
    })

    // The same start, landing in the last look's forced confirm (the stop's grace saw the container
    // 'created' twice, at rest; the last look before the wrapper exits finds it 'created' still, and
    // has nothing to kill then). Before: that confirm only watched it run, no kill, exit 123.
    it(`${engine.name}: a container that starts after the forced kill was sent gets a kill of its own`, { timeout: 150_000 }, async () => {
      const r = await stopThroughFake(engine, label, { run: CREATE_ONLY, inspect: startAtInspect(5) })
      expect(r.calls.filter((c) => c.startsWith('kill ')), 'the engine killed it').toEqual([`kill ${r.id}`])
      expect(r.code).not.toBe(123) // before: 123, 'still running (running) after stop and kill'
      expect(containerState(engine, r.id), 'after the wrapper exited').not.toBe('running')
    })

    // One failed look in the grace (a busy engine) is not the verdict. Here the engine's stop fails
    // (does nothing) and the third state look after it fails once. Before: 'did not answer', no
    // kill, exit 123 half a second after the stop, the container left running.
    it(`${engine.name}: a look that fails once in the grace does not spare the container its kill`, { timeout: 150_000 }, async () => {
      const r = await stopThroughFake(engine, label, {
        stop: ': > "$dir/stopped"; echo "Error: stop failed" >&2; exit 1',
        inspect: `if [ -e "$dir/stopped" ]; then n=$(($(cat "$dir/n" 2>/dev/null || echo 0) + 1)); echo $n > "$dir/n"; [ $n = 3 ] && { echo "Error response from daemon: i/o timeout" >&2; exit 1; }; fi`,
      })
      expect(r.verdict).toBe('container-gone') // before: container-left (did not answer)
      expect(r.calls.filter((c) => c.startsWith('kill ')), 'the engine killed it').toEqual([`kill ${r.id}`])
      expect(r.stateAtVerdict).not.toBe('running')
    })

    // --rm, the engine's own removal lost (the client's --rm dropped) and every rm -f refused: the
    // leftover is named with the engine's error. Before: named, but without why.
    it(`${engine.name}: a --rm leftover whose rm -f fails is named with the engine's error`, { timeout: 150_000 }, async () => {
      const r = await stopThroughFake(
        engine,
        label,
        {
          run: 'shift; n=$#; i=0; while [ $i -lt $n ]; do a=$1; shift; [ "$a" = --rm ] || set -- "$@" "$a"; i=$((i+1)); done; exec "$real" run "$@"',
          rm: 'echo "Error: rm refused" >&2; exit 1',
        },
        ['--rm'],
      )
      expect(r.verdict).toBe('container-left')
      expect(r.code).toBe(123)
      expect(r.stderr.find((l) => l.startsWith(`reapkit: container ${r.id} (${engine.name}) is still there`))).toMatch(/after stop and rm -f: Error: rm refused$/)
    })
  }
})
