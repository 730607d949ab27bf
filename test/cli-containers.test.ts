// `reapkit -- docker run -i --rm IMAGE ...` (and podman) on the real engines (test/containers.ts):
// the container belongs to the engine's daemon, so no signal of the wrapper reaches it; every stop
// path of the wrapper must end it through the engine (native/supervise/engine.c). Every container
// carries this test's own label and is removed by that label after each test.
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { containersWith, containerState, enginesSkipReason, engineRun, removeLabelledAndWait, type TestEngine, testEngines, testLabel, waitForEngine } from './containers'
import { delayingProxy } from './docker-delay-proxy'
import { canUnshare, exitOf, isGone, jsonLines, machineIdField, procStat, ROOT, spawnGroup, trackGroup, waitFor } from './helpers'

const BIN = join(ROOT, 'bin', 'reapkit')
const skipReason = enginesSkipReason()
const STOP = ['--verbose', '--close-timeout', '300', '--grace', '1000']
const ENGINE_BOUND = 30_000 // a container to start, or to be gone, on a busy two-core machine

const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`

/** The command a host would configure: `<engine> run -i [--rm] --label <test label> IMAGE ...`. */
function runArgs(engine: TestEngine, label: string, flags: string[], command: string[]): string[] {
  return [engine.bin, 'run', '-i', ...flags, '--label', label, engine.image, ...command]
}

type Launcher = 'direct' | 'sh -c' | 'npx'

/**
 * A host (a Node process holding the wrapper's three stdio pipes, as an MCP host does) that starts
 * `reapkit <wrapperArgs> -- <command>` directly, behind `sh -c` (which outlives the host), or behind
 * `npx --package=<this checkout> reapkit` (npm exec and its shell, which outlive it too). The
 * wrapper's --verbose events come out on the host's stdout.
 */
function startHost(engine: TestEngine, launcher: Launcher, wrapperArgs: string[], command: string[]) {
  const argv = [...wrapperArgs, '--', ...command]
  const spawnCall =
    launcher === 'direct'
      ? `spawn(${JSON.stringify(BIN)}, ${JSON.stringify(argv)}, opts)`
      : launcher === 'sh -c'
        ? `spawn('sh', ['-c', ${JSON.stringify([BIN, ...argv].map(sq).join(' ') + '; sleep 1000')}], opts)`
        : `spawn('npx', ${JSON.stringify(['--yes', `--package=${ROOT}`, 'reapkit', ...argv])}, { ...opts, cwd: ${JSON.stringify(ROOT)} })`
  const host = spawnGroup(process.execPath, ['-e', `
    const { spawn } = require('node:child_process')
    const opts = { stdio: ['pipe', 'pipe', 'pipe'] }
    const c = ${spawnCall}
    c.stderr.on('data', (d) => process.stdout.write(d))
    setInterval(() => {}, 1e6)`], { stdio: ['ignore', 'pipe', 'inherit'], env: engine.env })
  return { host, events: jsonLines(host.stdout!) }
}

/** The wrapper run directly by this test, its stdin a pipe kept open (no end-of-file). */
function startWrapper(engine: TestEngine, wrapperArgs: string[], command: string[], cwd?: string) {
  const w = spawnGroup(BIN, [...wrapperArgs, '--', ...command], { stdio: ['pipe', 'pipe', 'pipe'], env: engine.env, cwd })
  return { w, events: jsonLines(w.stderr!), out: jsonLines(w.stdout!) }
}

/** The wrapper's start: its client's group tracked for cleanup; waits for the container to run. */
async function started(engine: TestEngine, label: string, events: ReturnType<typeof jsonLines>, startMs = 10_000) {
  const start = await events.next((m) => m.event === 'start', startMs, 'the wrapper to start')
  trackGroup(start.pgid)
  await waitForEngine(() => containersWith(engine, label, false).length === 1, ENGINE_BOUND, 'the container to run')
  return start
}

/** Bounds a promise of the test's own (a proxy's, say). */
const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> => {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)))
  return Promise.race([p, late]).finally(() => clearTimeout(timer))
}

const goneWithin = (engine: TestEngine, label: string, what: string) =>
  waitForEngine(() => containersWith(engine, label).length === 0, ENGINE_BOUND, what)

if (skipReason !== null) {
  describe('reapkit -- docker run (containers)', () => {
    it.skip(`skipped: ${skipReason}`, () => {})
  })
}

for (const engine of testEngines()) {
  describe(`reapkit -- ${engine.name} run`, () => {
    let label = ''
    beforeEach(() => {
      label = testLabel()
    })
    afterEach(async () => {
      await removeLabelledAndWait(engine, label)
    })

    for (const launcher of ['direct', 'sh -c', 'npx'] as const) {
      it(`host SIGKILLed (${launcher}): the container is stopped and removed (--rm), its name free at once`, async () => {
        const name = `reapkit-test-${label.slice(-12)}`
        const { host, events } = startHost(engine, launcher, STOP, runArgs(engine, label, ['--rm', '--name', name], ['sleep', '1000']))
        const start = await started(engine, label, events, launcher === 'npx' ? 60_000 : 10_000)
        expect(start.host, 'the wrapper watches the host itself').toBe(host.pid)
        process.kill(host.pid!, 'SIGKILL')
        await goneWithin(engine, label, 'the container to be removed after its host died')
        await waitFor(() => isGone(start.pid), ENGINE_BOUND, 'the wrapper to exit')
        const again = engineRun(engine, ['run', '--rm', '--name', name, '--label', label, engine.image, 'true'])
        expect(again.code, `--name ${name} reused: ${again.stderr}`).toBe(0)
      })
    }

    it('SIGTERM to the wrapper, PID 1 ignoring it (busybox sleep): the engine kills it after the grace; gone before the wrapper exits', async () => {
      const { w, events } = startWrapper(engine, STOP, runArgs(engine, label, ['--rm'], ['sleep', '1000']))
      const start = await started(engine, label, events)
      const [id] = containersWith(engine, label)
      const labels = JSON.parse(engineRun(engine, ['inspect', '--format', '{{json .Config.Labels}}', id!]).stdout)
      const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
      const pidns = readlinkSync(`/proc/${start.pid}/ns/pid`).replace(/^pid:\[(\d+)\]$/, 'pidns:$1')
      expect(labels['reapkit.owner']).toBe(`${hostname()}/${bootId}/${start.pid}/${procStat(start.pid)![19]}/${pidns}/${machineIdField()}`)
      expect(labels['reapkit.run']).toMatch(/^[0-9a-f]{32}$/)
      const t0 = performance.now()
      w.kill('SIGTERM')
      const { code } = await exitOf(w, ENGINE_BOUND)
      expect(performance.now() - t0, 'the engine\'s stop waited the grace').toBeGreaterThanOrEqual(900)
      expect(containersWith(engine, label), 'no container left when the wrapper exits').toEqual([])
      expect(code).toBe(137) // the client's: its container was SIGKILLed by the engine
      const names = events.seen.map((e) => e.event)
      expect(names).toContain('container-gone')
      expect(events.seen.find((e) => e.event === 'container-stop')).toMatchObject({ why: 'signal', containers: 1, time: 1 })
    })

    it('SIGTERM to the wrapper, PID 1 draining on it: it drains and exits 0 well within the grace', async () => {
      const drain = 'trap "echo draining; sleep 0.2; echo drained; exit 0" TERM; echo ready; while :; do sleep 0.1; done'
      const { w, events, out } = startWrapper(engine, ['--verbose', '--grace', '30000'], runArgs(engine, label, ['--rm'], ['sh', '-c', drain]))
      await started(engine, label, events)
      await out.next((m) => m.raw === 'ready', ENGINE_BOUND, 'the server to be ready')
      const t0 = performance.now()
      w.kill('SIGTERM')
      const { code } = await exitOf(w, ENGINE_BOUND)
      const said = `the wrapper's events: ${JSON.stringify(events.seen)}; its stdout: ${JSON.stringify(out.seen.map((m) => m.raw))}`
      expect(out.seen.map((m) => m.raw), said).toContain('drained')
      expect(code, said).toBe(0)
      expect(performance.now() - t0, 'not the grace').toBeLessThan(30_000)
      expect(containersWith(engine, label)).toEqual([])
      // the engine's own stop was sent (the client's signal proxy is not all there is)
      expect(events.seen.find((e) => e.event === 'container-stop')).toMatchObject({ why: 'signal', containers: 1, time: 30 })
    })

    it('a container that exits by itself (its stdin ended): the wrapper passes its status and output on, one look finds nothing left', () => {
      const args = ['--verbose', '--', ...runArgs(engine, label, ['--rm'], ['sh', '-c', 'cat; exit 7'])]
      const r = spawnSync(BIN, args, { env: engine.env, encoding: 'utf8', input: 'hello\n', timeout: ENGINE_BOUND })
      expect(r.stdout).toBe('hello\n')
      expect(r.status, r.stderr).toBe(7)
      const events = r.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
      expect(events.find((e) => e.event === 'container-stop')).toMatchObject({ why: 'child-exit', containers: 0 })
      expect(containersWith(engine, label)).toEqual([])
    })

    it('without --rm: stopped, not removed (as the user asked)', async () => {
      const { w, events } = startWrapper(engine, STOP, runArgs(engine, label, [], ['sleep', '1000']))
      await started(engine, label, events)
      w.kill('SIGTERM')
      await exitOf(w, ENGINE_BOUND)
      const ids = containersWith(engine, label)
      expect(ids.length, 'the container is kept').toBe(1)
      expect(containerState(engine, ids[0]!)).toBe('exited')
    })

    it('the command\'s own exit (its client SIGKILLed, the container running): the container is stopped and removed', async () => {
      const { w, events } = startWrapper(engine, STOP, runArgs(engine, label, ['--rm'], ['sleep', '1000']))
      const start = await started(engine, label, events)
      process.kill(start.child, 'SIGKILL')
      const { code } = await exitOf(w, ENGINE_BOUND)
      expect(code).toBe(137)
      expect(containersWith(engine, label), 'no container left when the wrapper exits').toEqual([])
      expect(events.seen.find((e) => e.event === 'container-stop')).toMatchObject({ why: 'child-exit', containers: 1 })
    })

    it('global flags before `run`, and `container run`: recognized, and the stop speaks to the same engine; `run -d` is not ours to stop', async () => {
      const globals = engine.name === 'docker' ? ['-H', engine.env.DOCKER_HOST!] : ['--log-level', 'error']
      const { w, events } = startWrapper(engine, STOP, [engine.bin, ...globals, 'container', 'run', '-i', '--rm', '--label', label, engine.image, 'sleep', '1000'])
      await started(engine, label, events)
      expect(events.seen.find((e) => e.event === 'container')).toMatchObject({ engine: engine.name, autoRemove: true })
      w.kill('SIGTERM')
      await exitOf(w, ENGINE_BOUND)
      expect(containersWith(engine, label)).toEqual([])
      if (engine.name !== 'docker') return // (podman -d: its conmon is adopted by the wrapper's subreaper: see docs/containers.md)
      // The user asked a detached container to outlive its client: no labels, no stop.
      const detached = startWrapper(engine, STOP, [engine.bin, 'run', '-d', '--rm', '--label', label, engine.image, 'sleep', '1000'])
      expect((await exitOf(detached.w, ENGINE_BOUND)).code).toBe(0)
      expect(detached.events.seen.some((e) => e.event === 'container')).toBe(false)
      expect(containersWith(engine, label, false).length, 'still running').toBe(1)
    })

    // Issue 28 item 5: the wrapper read `-H=VALUE` (a short flag with `=`, which the client accepts) as
    // an unknown global, so the run was a plain command and SIGTERM left its container Up. The engine
    // is named by the flag alone here: no DOCKER_HOST for the client or for the wrapper's engine calls.
    it.runIf(engine.name === 'docker')('`docker -H=unix://... run`: recognized (the library\'s grammar), and SIGTERM stops the container through that engine', async () => {
      const { DOCKER_HOST: host, ...rest } = engine.env
      const flagOnly = { ...engine, env: rest }
      const { w, events } = startWrapper(flagOnly, STOP, [engine.bin, `-H=${host}`, 'run', '-i', '--rm', '--label', label, engine.image, 'sleep', '1000'])
      await started(engine, label, events)
      expect(events.seen.find((e) => e.event === 'container')).toMatchObject({ engine: 'docker', autoRemove: true })
      w.kill('SIGTERM')
      const { code } = await exitOf(w, ENGINE_BOUND)
      expect(containersWith(engine, label), 'no container left when the wrapper exits').toEqual([])
      expect(code, 'not 123: the engine answered through -H=').toBe(137)
      expect(events.seen.find((e) => e.event === 'container-stop')).toMatchObject({ why: 'signal', containers: 1 })
      expect(events.seen.map((e) => e.event)).toContain('container-gone')
    })

    it.runIf(canUnshare)('--isolate: the engine is spoken to from outside the namespace (docker), or the run is refused (podman)', async () => {
      if (engine.name === 'podman') {
        // podman inside --isolate's mount namespace would hide the container's network namespace from every
        // other podman on the machine: refused before anything starts
        const r = spawnSync(BIN, ['--isolate', '--', ...runArgs(engine, label, ['--rm'], ['true'])], { env: engine.env, encoding: 'utf8', timeout: ENGINE_BOUND })
        expect(r.status).toBe(125)
        expect(r.stderr).toMatch(/--isolate cannot run podman: /)
        expect(containersWith(engine, label)).toEqual([])
        return
      }
      const { w, events } = startWrapper(engine, ['--isolate', ...STOP], runArgs(engine, label, ['--rm'], ['sleep', '1000']))
      await events.next((m) => m.event === 'start' && m.role === 'supervisor', 10_000, 'the wrapper to start')
      await waitForEngine(() => containersWith(engine, label, false).length === 1, ENGINE_BOUND, 'the container to run')
      w.kill('SIGTERM')
      await exitOf(w, ENGINE_BOUND)
      expect(containersWith(engine, label), 'no container left when the wrapper exits').toEqual([])
      expect(events.seen.find((e) => e.event === 'container-gone')).toBeDefined()
    })

    it.runIf(engine.name === 'docker')('argv shapes: what is recognized (and whether --rm), what is left a plain command', () => {
      const image = engine.image
      const cases: Array<[string[], boolean | null]> = [ // null: not recognized
        [['run', '-i', '--rm', '--label', label, image, 'true'], true],
        [['run', '-i', '--rm=false', '--label', label, image, 'true'], false],
        [['run', '-i', '-e', 'A=1', '--env=B=2', '-eC=3', '--rm', '--label', label, '--name', `reapkit-test-${label.slice(-8)}`, image, 'true'], true],
        [['run', '-i', '--detach=false', '--label', label, image, 'sh', '-c', 'echo --rm -d'], false], // flags after the image are the container's
        [['run', '-id', '--label', label, image, 'true'], null], // detached: the user's to stop
        [['run', '-i', '--rm=t', '--label', label, image, 'true'], true], // Go's flag parser: 1 t T true TRUE True
        [['run', '-i', '--rm=True', '--label', label, image, 'true'], true],
        [['run', '-i', '--rm=F', '--label', label, image, 'true'], false],
        [['run', '-i', '--detach=T', '--rm', '--label', label, image, 'true'], null],
        [['run', '-i', '--rm=yes', '--label', label, image, 'true'], null], // the engine refuses it: no guess
        [['run', '-i', '--reapkit-unknown-flag', '--label', label, image, 'true'], null],
        [['--reapkit-unknown-global', 'run', '-i', '--label', label, image, 'true'], null],
        [['ps', '-q', '--filter', `label=${label}`], null],
      ]
      for (const [args, autoRemove] of cases) {
        const r = spawnSync(BIN, ['--verbose', '--grace', '1000', '--', engine.bin, ...args], { env: engine.env, encoding: 'utf8', timeout: ENGINE_BOUND })
        const event = r.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).find((e) => e.event === 'container')
        expect(event?.autoRemove ?? null, args.join(' ')).toBe(autoRemove)
        expect(r.status, `${args.join(' ')}: ${r.stderr}`).not.toBe(123)
      }
    })

    it('an engine that does not answer: exit 123 and the run named on stderr, never a silent success', async () => {
      const nowhere = engine.name === 'docker' ? ['-H', 'unix:///nonexistent/reapkit.sock'] : ['--url', 'unix:///nonexistent/reapkit.sock']
      const args = ['--grace', '1000', '--', engine.bin, ...nowhere, 'run', '-i', '--rm', '--label', label, engine.image, 'true']
      const { status, stderr } = spawnSync(BIN, args, { env: engine.env, encoding: 'utf8', timeout: ENGINE_BOUND })
      expect(status).toBe(123)
      expect(stderr).toMatch(new RegExp(`reapkit: ${engine.name} did not answer: the container of this run \\(label reapkit\\.run=[0-9a-f]{32}\\) may still be running`))
    })

    it('--no-container: the old behaviour, a plain command (no labels; the host\'s death leaves the container running)', async () => {
      const { host, events } = startHost(engine, 'direct', ['--no-container', ...STOP], runArgs(engine, label, ['--rm'], ['sleep', '1000']))
      const start = await started(engine, label, events)
      const [id] = containersWith(engine, label)
      const labels = JSON.parse(engineRun(engine, ['inspect', '--format', '{{json .Config.Labels}}', id!]).stdout)
      expect(Object.keys(labels).filter((k) => k.startsWith('reapkit.') && k !== 'reapkit.test')).toEqual([])
      process.kill(host.pid!, 'SIGKILL')
      await waitFor(() => isGone(start.pid), ENGINE_BOUND, 'the wrapper to exit')
      // (podman: its conmon died with the wrapper's tree, but its record still says running)
      expect(containerState(engine, id!)).toBe('running')
      expect(events.seen.some((e) => e.event === 'container')).toBe(false)
    })

    it('the user\'s own reapkit.run and reapkit.owner labels (--label, --label-file): ours win, and the stop finds the container', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'reapkit-labels-'))
      try {
        writeFileSync(join(dir, 'labels'), 'reapkit.run=fromfile\nreapkit.owner=fromfile\n')
        const flags = ['--rm', '--label-file', join(dir, 'labels'), '--label', 'reapkit.run=mine', '-l', 'reapkit.owner=mine']
        const { w, events } = startWrapper(engine, STOP, runArgs(engine, label, flags, ['sleep', '1000']))
        await started(engine, label, events)
        const [id] = containersWith(engine, label)
        const labels = JSON.parse(engineRun(engine, ['inspect', '--format', '{{json .Config.Labels}}', id!]).stdout)
        expect(labels['reapkit.run']).toMatch(/^[0-9a-f]{32}$/)
        expect(labels['reapkit.owner']).toMatch(/^[^/]+\/[^/]+\/\d+\/\d+\/pidns:\d+\/mid:([0-9a-f]{32}|-)$/)
        w.kill('SIGTERM')
        const { code } = await exitOf(w, ENGINE_BOUND)
        expect(code, 'not 123: the stop found its container').toBe(137)
        expect(containersWith(engine, label), 'no container left when the wrapper exits').toEqual([])
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })

    it.runIf(engine.name === 'docker')('a relative DOCKER_HOST (unix://d.sock): the engine is spoken to from the starting folder, as the client was', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'reapkit-rel-'))
      try {
        symlinkSync(engine.env.DOCKER_HOST!.replace(/^unix:\/\//, ''), join(dir, 'd.sock'))
        const relative = { ...engine, env: { ...engine.env, DOCKER_HOST: 'unix://d.sock' } }
        const { w, events } = startWrapper(relative, STOP, runArgs(engine, label, ['--rm'], ['sleep', '1000']), dir)
        await started(engine, label, events)
        w.kill('SIGTERM')
        const { code } = await exitOf(w, ENGINE_BOUND)
        expect(code, 'not 123: the engine answered').toBe(137)
        expect(containersWith(engine, label), 'no container left when the wrapper exits').toEqual([])
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })

    it.runIf(engine.name === 'docker')('SIGTERM while the daemon creates the container (its client dies first): the last look waits for it and removes it', async () => {
      // the create request reaches the daemon 1 s late, long after the client died of the SIGTERM
      const proxy = await delayingProxy(engine.env.DOCKER_HOST!, 1000)
      try {
        const slow = { ...engine, env: { ...engine.env, DOCKER_HOST: proxy.host } }
        const { w, events } = startWrapper(slow, STOP, runArgs(engine, label, ['--rm'], ['sleep', '1000']))
        const start = await events.next((m) => m.event === 'start', 10_000, 'the wrapper to start')
        trackGroup(start.pgid)
        await within(proxy.createSent, ENGINE_BOUND, 'the client to ask for its container')
        w.kill('SIGTERM')
        const { code } = await exitOf(w, ENGINE_BOUND)
        await within(proxy.createAnswered, ENGINE_BOUND, 'the daemon to create the container')
        expect(containersWith(engine, label), 'no container left when the wrapper exits').toEqual([])
        expect(code).toBe(143) // the client's, cut short by the SIGTERM
        expect(events.seen.find((e) => e.event === 'container-stop' && e.why === 'settle')).toMatchObject({ containers: 1 })
        expect(events.seen.map((e) => e.event)).toContain('container-gone')
      } finally {
        await proxy.close()
      }
    })
  })
}

// podman under --isolate would mount its network namespaces where no other podman on the machine
// can reach them: never run, whatever the arguments. A fake `podman` on PATH that only logs its argv
// shows it (the real one is never run under --isolate by a test).
describe('reapkit --isolate -- podman ...', () => {
  it.runIf(process.platform !== 'win32')('is refused (exit 125) for every podman command, recognized run or not, and --no-container too', () => {
    const dir = mkdtempSync(join(tmpdir(), 'reapkit-fake-podman-'))
    try {
      const log = join(dir, 'argv.log')
      writeFileSync(join(dir, 'podman'), `#!/bin/sh\necho "$*" >> ${sq(log)}\n`)
      chmodSync(join(dir, 'podman'), 0o755)
      const env = { ...process.env, PATH: `${dir}:${process.env.PATH}` }
      const cases = [
        ['--isolate', '--no-container', '--', 'podman', 'run', '-i', '--rm', 'busybox', 'true'],
        ['--isolate', '--', 'podman', 'run', '-d', 'busybox', 'sleep', '1'],
        ['--isolate', '--', 'podman', 'run', '-i', '--reapkit-unknown-flag', 'busybox', 'true'],
        ['--isolate', '--', 'podman', 'ps'],
        ['--isolate', '--', join(dir, 'podman'), 'run', '-i', 'busybox', 'true'],
      ]
      for (const args of cases) {
        const r = spawnSync(BIN, args, { env, encoding: 'utf8', timeout: 10_000 })
        expect(r.status, args.join(' ')).toBe(125)
        expect(r.stderr).toMatch(/--isolate cannot run podman: /)
      }
      expect(existsSync(log), 'podman was never run').toBe(false)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
