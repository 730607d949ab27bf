// `reapkit -- <engine> run -i ...` stopped by SIGTERM: the client (the command) has the stop signal
// before the engine's stop, on the cgroup's path as on the tree's (native/supervise/stop.c
// begin_stop). Its signal proxy passes the signal on while the container runs; sent only after the
// engine's stop, the signal reached a client finishing on its own, its container gone, and a podman
// client died of it: cli-containers' drain test saw exit 143 where the container drained and exited
// 0. Real engine, real container; the client on PATH (test/fake-engine.ts, the input under test)
// runs the real one, logs the SIGTERM it gets and passes it on, and logs the engine's stop call.
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { containersWith, describeWithEngines, enginesSkipReason, removeLabelledAndWait, testEngines, testLabel, waitForEngine } from './containers'
import { writeFakeEngine } from './fake-engine'
import { exitOf, jsonLines, ROOT, spawnGroup, trackGroup } from './helpers'

const BIN = join(ROOT, 'bin', 'reapkit')
const skip = enginesSkipReason()
const ENGINE_BOUND = 30_000 // a container to start, or to be gone, on a busy two-core machine

for (const engine of skip === null ? testEngines() : [undefined]) describeWithEngines(`reapkit -- ${engine?.name ?? '<engine>'} run: the client has the stop signal before the engine's stop`, skip, () => {
  let label = ''
  beforeEach(() => {
    label = testLabel()
  })
  afterEach(async () => {
    await removeLabelledAndWait(engine!, label)
  })

  // The run: the real client in the background (its stdin the wrapper's, kept through fd 3), the
  // SIGTERM this shell gets logged and passed on to it, its status passed on.
  const direct = (log: string) => `exec 3<&0
    trap 'echo client-term >> ${log}; kill -TERM $c 2>/dev/null' TERM
    "$real" "$@" <&3 3<&- &
    c=$!
    while :; do wait $c; s=$?; kill -0 $c 2>/dev/null || exit $s; done`
  // Review: the same below a shim that neither execs nor passes signals on (the command is the shim,
  // the client its child, in its group): the client must still have the signal first. On the
  // cgroup's path only the command's own pid had it, and this client never got it.
  const shim = (log: string) => `exec 3<&0
    sh -c 'trap "echo client-term >> ${log}; kill -TERM $c 2>/dev/null" TERM; "$0" "$@" <&3 3<&- & c=$!; while :; do wait $c; s=$?; kill -0 $c 2>/dev/null || exit $s; done' "$real" "$@"
    exit $?`
  for (const [path, how, run] of [['cgroup', 'directly', direct], ['tree', 'directly', direct], ['cgroup', 'below a shim', shim], ['tree', 'below a shim', shim]] as const) {
    it(`on the ${path}'s path, the client run ${how}`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'reapkit-order-engine-'))
      const log = join(dir, 'order')
      const fake = writeFakeEngine(dir, { bin: engine!.bin, passTo: engine!, calls: { run: { sh: run(log) }, stop: { sh: `echo engine-stop >> ${log}` } } })
      try {
        const drain = 'trap "echo drained; exit 0" TERM; echo ready; while :; do sleep 0.1; done'
        const args = ['--verbose', '--grace', '20000', ...(path === 'tree' ? ['--no-cgroup'] : []), '--', engine!.bin, 'run', '-i', '--rm', '--label', label, engine!.image, 'sh', '-c', drain]
        const w = spawnGroup(BIN, args, { stdio: ['pipe', 'pipe', 'pipe'], env: fake.env })
        const events = jsonLines(w.stderr!)
        const out = jsonLines(w.stdout!)
        const start = await events.next((e) => e.event === 'start', 10_000, 'the wrapper to start')
        trackGroup(start.pgid)
        expect(start.cgroup === null, `the ${path}'s path: ${JSON.stringify(start)}`).toBe(path === 'tree')
        await out.next((m) => m.raw === 'ready', ENGINE_BOUND, 'the container to be ready')
        w.kill('SIGTERM')
        await exitOf(w, ENGINE_BOUND)
        const order = readFileSync(log, 'utf8').split('\n').filter(Boolean)
        expect(order, `the wrapper's events: ${JSON.stringify(events.seen)}`).toEqual(['client-term', 'engine-stop'])
        await waitForEngine(() => containersWith(engine!, label).length === 0, ENGINE_BOUND, 'the container to be gone')
      } finally {
        fake.dispose()
      }
    })
  }
})
