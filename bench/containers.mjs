// Containers (issue 18): what becomes of a `docker run -i --rm IMAGE` server when its host goes.
// Called by run.mjs; also runs alone: `node bench/containers.mjs` (BENCH_QUICK=1 honoured).
//  - host SIGKILLed -> container gone: a Node host that started the client itself, plainly and with
//    `--init` (the workaround users are told to use), and one that started it behind the `reapkit`
//    command; time from the SIGKILL until the engine lists the container no more, and how many
//    were still running at the bound;
//  - closeClient() of a containerized server (PID 1 ignores SIGTERM and stdin end) beside the MCP
//    SDK transport's close(): time, and whether the container was gone when the close returned.
// The engine is the one scripts/containers/setup.sh prepared (its private dockerd), or the
// environment's docker when there is no such file. Every container here carries this run's own
// `reapkit.bench` label and is removed by it at the end; processes are killed by the pids we hold.
import { spawn, spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ownerTag, removeOwnedCgroups } from './cgroups.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')
const require = createRequire(import.meta.url)
const reapkit = require(join(root, 'dist', 'cjs', 'index.js'))
const BIN = join(root, 'bin', 'reapkit')
const LABEL = `reapkit.bench=${randomUUID()}`
const BOUND_MS = 15_000
const sleep = (t) => new Promise((r) => setTimeout(r, t))
const now = () => performance.now()

/** The engine's environment, or null (with why) when no docker answers here. */
function engineEnv() {
  const file = join(process.env.REAPKIT_ENGINES_DIR ?? '/tmp/reapkit-engines', 'engines.env')
  const env = { ...process.env }
  if (existsSync(file)) {
    const host = /^REAPKIT_TEST_DOCKER_HOST=(.*)$/m.exec(readFileSync(file, 'utf8'))?.[1]
    if (host) env.DOCKER_HOST = host
  }
  const r = spawnSync('docker', ['version', '--format', '{{.Server.Version}}'], { env, encoding: 'utf8', timeout: 10_000 })
  return r.status === 0 ? { env, version: r.stdout.trim() } : { why: `no docker engine answers (${(r.stderr || r.error?.message || '').trim().split('\n')[0]})` }
}

function docker(env, args) {
  return spawnSync('docker', args, { env, encoding: 'utf8', timeout: 30_000 })
}

/** Ids of this run's containers with `tag` (running only unless `all`). */
function listed(env, tag, all = true) {
  const r = docker(env, ['ps', ...(all ? ['-a'] : []), '-q', '--filter', `label=${LABEL}`, '--filter', `label=reapkit.bench.tag=${tag}`])
  return r.status === 0 ? r.stdout.split('\n').filter(Boolean) : null
}

async function until(predicate, ms) {
  const end = now() + ms
  while (now() < end) {
    if (predicate()) return true
    await sleep(100)
  }
  return predicate()
}

/** A Node host that starts `argv` with a stdin pipe and holds it; prints the client's pid. */
function startHost(argv, env) {
  const code = `const c = require('node:child_process').spawn(process.argv[1], process.argv.slice(2), { stdio: ['pipe', 'ignore', 'inherit'] });
process.stdout.write(c.pid + '\\n'); setInterval(() => {}, 1e9)`
  const host = spawn(process.execPath, ['-e', code, ...argv], { env, stdio: ['ignore', 'pipe', 'inherit'], detached: true })
  return new Promise((resolve, reject) => {
    let out = ''
    host.stdout.on('data', (d) => {
      out += d
      if (out.includes('\n')) resolve({ host, client: Number(out.trim()) })
    })
    host.once('error', reject)
  })
}

function killPid(pid) {
  try {
    process.kill(pid, 'SIGKILL')
  } catch {}
}

/** One host SIGKILL: ms until the container is gone (null past the bound), and whether it survived. */
async function hostKill(env, image, how, i) {
  const tag = `${how}-${i}`
  const run = ['run', '-i', '--rm', ...(how === 'init' ? ['--init'] : []), '--label', LABEL, '--label', `reapkit.bench.tag=${tag}`, image, 'sleep', '1000']
  const argv = how === 'reapkit' ? [BIN, '--close-timeout', '500', '--grace', '2000', '--', 'docker', ...run] : ['docker', ...run]
  const { host, client } = await startHost(argv, env)
  // With reapkit the host's child is the wrapper: pinned, and its cgroup's owner read, while it lives.
  const wrapper = how === 'reapkit' ? reapkit.openProcess(client) : null
  const owner = wrapper ? ownerTag(client) : null
  try {
    if (!(await until(() => (listed(env, tag, false) ?? []).length === 1, 20_000))) throw new Error(`bench: the ${how} container did not start`)
    const t0 = now()
    process.kill(host.pid, 'SIGKILL') // the host alone, as when a host crashes: what it started stays
    const gone = await until(() => (listed(env, tag) ?? ['?']).length === 0, BOUND_MS)
    return { ms: gone ? now() - t0 : null, survived: !gone }
  } finally {
    // The wrapper goes on after its container is gone (its last look, its cgroup's removal): it is
    // given the time to end on its own before the SIGKILL, which would leave its cgroup behind.
    if (wrapper) await Promise.race([wrapper.exited, sleep(10_000)])
    killPid(client) // the client we started (a no-op once gone)
    if (wrapper) {
      await Promise.race([wrapper.exited, sleep(5000)])
      wrapper.close()
      await removeOwnedCgroups(owner) // (none when it ended on its own)
    }
    const ids = listed(env, tag) ?? []
    if (ids.length > 0) docker(env, ['rm', '-f', ...ids])
  }
}

/** closeClient() (reapkit's spawn) or the SDK transport's close() of a container that ignores both stdin end and SIGTERM. */
async function closeContainer(env, image, how, i) {
  const tag = `close-${how}-${i}`
  const args = ['run', '-i', '--rm', '--label', LABEL, '--label', `reapkit.bench.tag=${tag}`, image, 'sleep', '1000']
  let t0
  let clientPid = null
  try {
    if (how === 'reapkit') {
      const child = reapkit.spawn('docker', args, { env, stdio: ['pipe', 'pipe', 'inherit'] })
      clientPid = child.pid
      await until(() => (listed(env, tag, false) ?? []).length === 1, 20_000)
      t0 = now()
      await reapkit.closeClient(child)
    } else {
      const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js')
      const transport = new StdioClientTransport({ command: 'docker', args, env, stderr: 'inherit' })
      await transport.start()
      clientPid = transport.pid
      await until(() => (listed(env, tag, false) ?? []).length === 1, 20_000)
      t0 = now()
      await transport.close()
    }
    const ms = now() - t0
    await sleep(200)
    return { ms, survived: (listed(env, tag, false) ?? []).length > 0 }
  } finally {
    if (clientPid) killPid(clientPid)
    const ids = listed(env, tag) ?? []
    if (ids.length > 0) docker(env, ['rm', '-f', ...ids])
  }
}

export async function containerFigures(quick = process.env.BENCH_QUICK === '1') {
  const engine = engineEnv()
  if (!engine.env) return { skipped: engine.why }
  const image = process.env.REAPKIT_BENCH_IMAGE ?? 'reapkit-test/busybox'
  if (docker(engine.env, ['image', 'inspect', image]).status !== 0) return { skipped: `no image ${image} (scripts/containers/setup.sh imports it)` }
  const n = quick ? 1 : 5
  const rows = { plain: [], init: [], reapkit: [], closeReapkit: [], closeSdk: [] }
  try {
    for (let i = 0; i < n; i++) {
      for (const how of ['plain', 'init', 'reapkit']) rows[how].push(await hostKill(engine.env, image, how, i))
      rows.closeReapkit.push(await closeContainer(engine.env, image, 'reapkit', i))
      rows.closeSdk.push(await closeContainer(engine.env, image, 'sdk', i))
    }
  } finally {
    const r = docker(engine.env, ['ps', '-aq', '--filter', `label=${LABEL}`])
    const ids = r.stdout?.split('\n').filter(Boolean) ?? []
    if (ids.length > 0) docker(engine.env, ['rm', '-f', ...ids])
  }
  return { engine: `docker ${engine.version}`, image, n, boundMs: BOUND_MS, rows }
}

const median = (xs) => {
  const s = xs.filter((v) => v !== null).sort((a, b) => a - b)
  return s.length === 0 ? null : s[Math.floor(s.length / 2)]
}

export function containerMarkdown(d) {
  if (d.skipped) return `## Servers in containers\n\nNot measured: ${d.skipped}.\n`
  const cell = (rows) => {
    const left = rows.filter((r) => r.survived).length
    const m = median(rows.map((r) => r.ms))
    return `${m === null ? `not gone after ${d.boundMs / 1000} s` : `${m.toFixed(0)} ms (median)`} | ${left} of ${rows.length}`
  }
  return `## Servers in containers

\`docker run -i --rm IMAGE sleep 1000\` (${d.engine}; PID 1 ignores SIGTERM and stdin end, as a server that
does not exit on EOF), ${d.n} run(s) each, in the same run.

| host SIGKILLed | container gone after | containers still running at ${d.boundMs / 1000} s |
|---|---:|---:|
| a Node host that ran \`docker run -i --rm\` | ${cell(d.rows.plain)} |
| the same with \`--init\` (tini as PID 1) | ${cell(d.rows.init)} |
| the host ran \`reapkit --close-timeout 500 --grace 2000 -- docker run -i --rm\` | ${cell(d.rows.reapkit)} |

| close of the container client | close took | containers still running after it |
|---|---:|---:|
| reapkit \`closeClient()\` of \`spawn('docker', ['run', '-i', '--rm', ...])\` | ${cell(d.rows.closeReapkit)} |
| MCP SDK \`StdioClientTransport.close()\` | ${cell(d.rows.closeSdk)} |

\`--init\` forwards signals to PID 1, but when the host is SIGKILLed nobody sends one: the client
only sees its stdin end, which this PID 1 ignores. The SDK signals its client; the client's
signal proxy passes SIGTERM on (ignored by PID 1), and SIGKILL of the client reaches nothing in the
container.
`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(containerMarkdown(await containerFigures()))
