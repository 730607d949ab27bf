// Issue 31 item 5, a per-child `id` label on the Supervisor's Prometheus counters: opt-in, bounded
// (a cap on distinct ids, the rest under id="_other"). Checked with a real text parser, with
// promtool's linter, and with a real Prometheus server scraping a real HTTP endpoint and answering
// `sum by (id) (rate(reapkit_supervisor_restarts_total[5m]))`. The promtool and Prometheus parts
// need those programs (Debian's `prometheus` package) and skip cleanly without them. Every child
// and server is stopped after the test, by pid; every wait is bounded.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { registerSupervisorMetrics } from '../lib/index'
import { scrape } from './prometheus'
import { waitFor } from './helpers'
import { cleanupAfterEach, settled } from './supervisor-cleanup'

const posix = process.platform !== 'win32'
const { supervise, tempDir } = cleanupAfterEach()
const { Registry } = createRequire(__filename)('prom-client') as typeof import('prom-client')
const has = (program: string): boolean => spawnSync(program, ['--version'], { stdio: 'ignore' }).status === 0

const started = { children: [] as ChildProcess[], servers: [] as Server[] }
afterEach(async () => {
  for (const child of started.children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((res) => child.once('exit', res))
      child.kill('SIGKILL')
      await gone
    }
  }
  for (const server of started.servers.splice(0)) await new Promise((res) => server.close(res))
})

/** A supervisor with four request ids that crash and restart, and its metrics registered with `byId`. */
async function crashingIds(maxIds: number) {
  const { sup } = supervise()
  const registry = new Registry()
  const unregister = registerSupervisorMetrics(sup, registry, { byId: { maxIds } })
  for (const id of ['a', 'b', 'c', 'd']) {
    sup.spawn('sh', ['-c', 'exit 1'], { requestId: id, stdio: 'ignore', restart: 'on-failure', backoff: { initialMs: 20 }, intensity: { maxRestarts: 1 } })
  }
  for (const id of ['a', 'b', 'c', 'd']) await settled(sup, id, 'given-up')
  return { sup, registry, unregister }
}

describe.runIf(posix)('registerSupervisorMetrics({ byId })', () => {
  it('labels every counter with the child id, at most maxIds of them, the rest under _other', async () => {
    const { registry, unregister } = await crashingIds(2)
    const text = await registry.metrics()
    const { value, family } = scrape(text, 'reapkit_supervisor_')
    expect(value('restarts_total', { id: 'a' })).toBe(1)
    expect(value('restarts_total', { id: 'b' })).toBe(1)
    expect(value('restarts_total', { id: '_other', id_type: 'overflow' })).toBe(2) // c and d
    expect(value('restarts_total', { id: 'a', id_type: 'string' })).toBe(1)
    expect(family('restarts_total')!.metrics).toHaveLength(3)
    expect(value('starts_total', { id: 'a' })).toBe(2)
    expect(value('given_up_total', { id: '_other' })).toBe(2)
    expect(value('exits_total', { id: 'a', code: '1' })).toBe(2)
    expect(family('children')!.metrics.every((m) => m.labels?.id === undefined)).toBe(true) // by status only
    unregister()
    expect(await registry.metrics()).not.toContain('reapkit_supervisor_')
  })

  it('no request id can take another\'s series: 1 and "1", none and "", "_other" and the overflow are apart (id_type)', async () => {
    const { sup } = supervise()
    const registry = new Registry()
    registerSupervisorMetrics(sup, registry, { byId: { maxIds: 5 } })
    for (const requestId of [1, '1', undefined, '', '_other', 'past-the-cap']) sup.spawn('true', [], { stdio: 'ignore', ...(requestId === undefined ? {} : { requestId }) })
    await waitFor(() => sup.list().every((r) => r.status === 'exited'), 20_000, 'every child to exit')
    const { value, family } = scrape(await registry.metrics(), 'reapkit_supervisor_')
    const series = family('starts_total')!.metrics.map((m) => `${m.labels!.id_type}:${m.labels!.id}=${m.value}`)
    expect(series.sort()).toEqual(['none:=1', 'number:1=1', 'overflow:_other=1', 'string:=1', 'string:1=1', 'string:_other=1'].sort())
    expect(value('exits_total', { id: '_other', id_type: 'overflow', code: '0' })).toBe(1) // past-the-cap's
  })

  it('is opt-in: without it no id label; a bad cap is refused before anything is registered', async () => {
    const { sup } = supervise()
    const registry = new Registry()
    expect(() => registerSupervisorMetrics(sup, registry, { byId: { maxIds: 0 } })).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }))
    expect(() => registerSupervisorMetrics(sup, registry, { byId: 'yes' as never })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
    expect((await registry.metrics()).trim()).toBe('')
    registerSupervisorMetrics(sup, registry)
    expect(await registry.metrics()).not.toContain('id="')
  })

  it.runIf(has('promtool'))('promtool check metrics finds nothing to say about the scrape', async () => {
    const { registry } = await crashingIds(2)
    const text = await registry.metrics()
    expect(text).toContain('reapkit_supervisor_restarts_total{id="a",id_type="string"} 1')
    const lint = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 })
    expect(lint.status, lint.stdout + lint.stderr).toBe(0)
    expect((lint.stdout + lint.stderr).trim()).toBe('')
  })

  it.runIf(has('prometheus'))('a real Prometheus scrapes it over HTTP and answers sum by (id) (rate(restarts_total[5m]))', async () => {
    const { sup } = supervise()
    const registry = new Registry()
    registerSupervisorMetrics(sup, registry, { byId: true })
    // 'loop' restarts for as long as the test runs (its window allows it); 'calm' never does.
    sup.spawn('sh', ['-c', 'sleep 0.2; exit 1'], { requestId: 'loop', stdio: 'ignore', restart: 'always', backoff: { initialMs: 50, maxMs: 50 }, intensity: { maxRestarts: 10_000 } })
    sup.spawn('sleep', ['1000'], { requestId: 'calm', stdio: 'ignore' })
    const endpoint = createServer((req, res) => {
      void registry.metrics().then((text) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(text))
    })
    started.servers.push(endpoint)
    await new Promise<void>((res) => endpoint.listen(0, '127.0.0.1', res))
    const target = `127.0.0.1:${(endpoint.address() as { port: number }).port}`
    const dir = tempDir('reapkit-prometheus-')
    writeFileSync(join(dir, 'prometheus.yml'), `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: reapkit\n    static_configs:\n      - targets: ['${target}']\n`)
    const webPort = await freePort()
    const prometheus = spawn('prometheus', [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${webPort}`,
    ], { stdio: 'ignore' })
    started.children.push(prometheus)
    const query = encodeURIComponent('sum by (id) (rate(reapkit_supervisor_restarts_total[5m]))')
    let result: Array<{ metric: { id?: string }; value: [number, string] }> = []
    // Prometheus answers once it is up and has scraped twice (a rate needs two samples): asked
    // every half second, within a minute (a busy machine starts it slowly).
    const deadline = Date.now() + 60_000
    const seen = () => result.some((r) => r.metric.id === 'loop' && Number(r.value[1]) > 0)
    while (!seen()) {
      if (Date.now() > deadline) throw new Error(`Prometheus did not see the restarts of loop within 60 s: ${JSON.stringify(result)}`)
      await new Promise((r) => setTimeout(r, 500))
      const answer = await fetch(`http://127.0.0.1:${webPort}/api/v1/query?query=${query}`).then((r) => r.json(), () => null)
      result = (answer as { data?: { result?: typeof result } } | null)?.data?.result ?? []
    }
    const byId = Object.fromEntries(result.map((r) => [r.metric.id, Number(r.value[1])]))
    expect(byId.loop).toBeGreaterThan(0)
    expect(byId.calm ?? 0).toBe(0)
  })
})

/** A free TCP port on 127.0.0.1 (listened on once, then released). */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res))
  const { port } = server.address() as { port: number }
  await new Promise((res) => server.close(res))
  return port
}
