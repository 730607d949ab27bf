// The README's core API, as a user writes it in TypeScript (ESM: the package's "import" types).
import { afterEach, beforeEach } from 'vitest'
import {
  capabilities,
  closeClient,
  createKeepalive,
  exec,
  execFile,
  fork,
  killProcessGracefully,
  openProcess,
  setChildSubreaper,
  setParentDeathSignal,
  spawn,
  spawnedInfo,
  Supervisor,
  supervisorPath,
  watchExit,
  watchParent,
} from 'reapkit'
import { getDefaultEnvironment } from 'reapkit/mcp'
import { promisify } from 'node:util'
import { installLeakGuard } from 'reapkit/testing'

installLeakGuard({ beforeEach, afterEach })

const caps = capabilities()
const quiet = spawn('x', [], { stdio: 'ignore' })
const child = spawn('npx', ['-y', 'some-mcp-server'], { stdio: ['pipe', 'pipe', 'inherit'], env: getDefaultEnvironment() })
const info = spawnedInfo(child)
const pgid: number | null | undefined = info?.pgid
const wrapped = spawn(supervisorPath(), ['--', 'uvx', 'some-server'], { stdio: ['pipe', 'pipe', 'inherit'] })

const { code, signal } = await watchExit(quiet, { timeoutMs: 5000 })
await watchExit(child, { signal: AbortSignal.timeout(1000) })
const handle = openProcess(wrapped.pid ?? 0)
try {
  handle.signal('SIGTERM')
  await watchExit(handle, { timeoutMs: 5000 })
} finally {
  handle.close()
}

const r = await killProcessGracefully(child, { graceMs: 5000 })
const report = await closeClient(wrapped, { close: async () => {} })
watchParent({ onExit: ({ parentPid }) => void parentPid })
watchParent({ deathSignal: 'SIGTERM', onExit: () => {} })
setParentDeathSignal('SIGKILL')
setChildSubreaper(true)

const sup = new Supervisor({ closeTimeoutMs: 2000, graceMs: 9000 })
sup.on('restart', (record) => void record.restarts)
sup.spawn('uvx', ['some-server'], {
  requestId: 'github',
  stdio: 'pipe',
  restart: 'on-failure',
  backoff: { initialMs: 100, maxMs: 30_000, factor: 2, jitter: 0.1 },
  intensity: { maxRestarts: 5, windowMs: 60_000 },
  health: { check: async ({ child, record, signal }) => void [child.pid, record.pid, signal.aborted], intervalMs: 10_000, timeoutMs: 5000, failures: 3 },
})
const running: number = sup.metrics().children.running
const first = sup.get('github')?.incarnations[0]
await sup.terminate('github', { reason: 'cancelled' })
await sup.shutdownAll()
sup.dispose()

const keepalive = createKeepalive({ onShutdown: () => {} })
const result: number = await keepalive.run(async (abort) => (abort.aborted ? 0 : 1))
void [caps, pgid, code, signal, r, report, running, first, result]

// exec, execFile and fork as Node types them: stdout is a string by default, a Buffer for
// encoding 'buffer'; util.promisify gives { stdout, stderr } and .child; reapkit's options too.
exec('ls', (err, stdout: string) => void [err?.code, stdout.trim()])
exec('ls', { encoding: 'buffer', group: true }, (_err, stdout) => void stdout.readUInt8(0))
execFile('ls', ['-l'], { timeout: 1000, parentDeathSignal: 'SIGTERM' }, (err, stdout: string) => void [err?.killed, stdout])
const listed = promisify(exec)('ls')
const { stdout: listing }: { stdout: string } = await listed
void [listed.child.pid, listing]
const asBuffers = await promisify(execFile)('ls', [], { encoding: 'buffer' })
void asBuffers.stdout.readUInt8(0)
const worker = fork('worker.js', ['--flag'], { execArgv: [], silent: true, serialization: 'advanced', foreground: false })
worker.send({ hello: 1 })

// The types say no where they should (were they `any`, these lines would compile, and tsc fail on
// the unused directives).
// @ts-expect-error: a stdio value Node does not know
spawn('x', [], { stdio: 'nonsense' })
// @ts-expect-error: graceMs is a number
await killProcessGracefully(child, { graceMs: '5s' })
// @ts-expect-error: no such restart policy
sup.spawn('x', [], { restart: 'sometimes' })
// @ts-expect-error: stdout is a Buffer with encoding 'buffer', not a string
exec('ls', { encoding: 'buffer' }, (_err, stdout: string) => void stdout)
// @ts-expect-error: fork takes a module path, not a number
fork(1)
