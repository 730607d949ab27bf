// Issue 18: a dockerd that answers some calls and not others, through a proxy on a socket of this
// test's own in front of the shared daemon (real client, real daemon; only the wire is held):
// - the engine's stop and kill never answered: the container step ends by one deadline (grace +
//   confirm + a small slack), not the sum of each call's bound. Before: about three call bounds.
// - every endpoint silent at this process's exit: the exit backstop gives up by its one total
//   bound. Before: each endpoint's listing took its own bound, one after another.
// - the create held until the client is dead: the engine finishes it after its client died; the
//   step's second look finds the `created` container and removes it. Before: 'gone' with no ids,
//   and the container (with its --name) stayed.
import { spawn as nodeSpawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, request, type Server } from 'node:http'
import { createServer as createNetServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, it } from 'vitest'
import { killProcessGracefully, spawn, spawnedInfo } from '../lib/index'
import { stopContainerRun } from '../lib/mechanisms/container/stop'
import { containersWith, describeWithEngines, enginesSkipReason, removeLabelledAndWait, testEngines, testLabel, waitForEngine } from './containers'
import { IGNORES_TERM } from './containers-lib'
import { exitOf, spawnFixture } from './helpers'

const docker = testEngines().find((e) => e.name === 'docker')
const skip = enginesSkipReason() ?? (docker ? null : 'no docker engine')
// Read here, not in the describe body: that body runs even when the block is skipped (no engine set up).
const upstream = (docker?.env.DOCKER_HOST ?? '').replace(/^unix:\/\//, '')

interface Proxy {
  host: string
  /** Requests seen, `METHOD path`. */
  seen: string[]
  close(): Promise<void>
}

/** A proxy to the shared dockerd: requests that `hold` matches get no answer (a create is passed on after `createDelayMs`). */
async function proxy(dir: string, upstream: string, hold: RegExp, createDelayMs = 0): Promise<Proxy> {
  const seen: string[] = []
  const held = new Set<import('node:http').ServerResponse>()
  const server: Server = createServer((req, res) => {
    const what = `${req.method} ${req.url}`
    seen.push(what)
    if (hold.test(what)) return void held.add(res)
    // The body is read at once: a held create is passed on whole even after its client is gone.
    const body: Buffer[] = []
    req.on('data', (c: Buffer) => body.push(c))
    const forward = (): void => {
      const up = request({ socketPath: upstream, path: req.url, method: req.method, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers)
        r.pipe(res)
      })
      up.on('error', () => res.destroy())
      res.on('error', () => {})
      up.end(Buffer.concat(body))
    }
    const delay = /^POST .*\/containers\/create/.test(what) ? createDelayMs : 0
    let sent = false
    const send = (): void => {
      if (sent) return
      sent = true
      if (delay > 0) setTimeout(forward, delay)
      else forward()
    }
    req.on('end', send)
    req.on('aborted', () => delay > 0 && send())
  })
  const sock = join(dir, 'proxy.sock')
  await new Promise<void>((res) => server.listen(sock, res))
  return {
    host: `unix://${sock}`,
    seen,
    close: () =>
      new Promise((res) => {
        for (const r of held) r.destroy()
        server.closeAllConnections()
        server.close(() => res())
      }),
  }
}

describeWithEngines('containers: a daemon that holds some calls', skip, () => {
  const engine = docker!
  let label = ''
  let dir = ''
  let cleanup: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    for (const c of cleanup.reverse()) await c()
    cleanup = []
    await removeLabelledAndWait(engine, label)
    rmSync(dir, { recursive: true, force: true })
  })

  it('stop and kill never answered: the step ends by its one deadline, uncertain or survived, never gone', async () => {
    label = testLabel()
    dir = mkdtempSync(join(tmpdir(), 'reapkit-hang-'))
    const p = await proxy(dir, upstream, /^POST .*\/containers\/[^/]+\/(stop|kill)/)
    cleanup.push(() => p.close())
    const child = spawn(engine.bin, ['run', '-i', '--rm', '--label', label, engine.image, ...IGNORES_TERM], { env: engine.env, stdio: ['pipe', 'ignore', 'ignore'] })
    cleanup.push(() => void (child.exitCode === null && child.signalCode === null && child.kill('SIGKILL')))
    await waitForEngine(() => containersWith(engine, label, false).length === 1, 60_000, 'the container to run')
    const record = spawnedInfo(child)!.container!
    const started = performance.now()
    const outcome = await stopContainerRun({ ...record, env: { ...record.env, DOCKER_HOST: p.host } }, { graceMs: 2000, confirmMs: 3000 })
    const took = performance.now() - started
    expect(p.seen.some((s) => /\/stop/.test(s))).toBe(true)
    expect(outcome.state).not.toBe('gone')
    expect(outcome.survivors).toHaveLength(1)
    // grace + confirm + the slack is 7.5 s; before, the held stop alone took its 11 s bound, then the kill 10 s more.
    expect(took).toBeLessThan(12_000)
  }, 60_000)

  it('the client killed while its create is held: the engine creates the container after; the stop finds it and removes it', async () => {
    label = testLabel()
    dir = mkdtempSync(join(tmpdir(), 'reapkit-hang-'))
    const p = await proxy(dir, upstream, /^$/, 800)
    cleanup.push(() => p.close())
    const name = `reapkit-test-${label.slice(-12)}`
    const env = { ...engine.env, DOCKER_HOST: p.host }
    const child = spawn(engine.bin, ['run', '-i', '--rm', '--name', name, '--label', label, engine.image, ...IGNORES_TERM], { env, stdio: ['pipe', 'ignore', 'ignore'] })
    cleanup.push(() => void (child.exitCode === null && child.signalCode === null && child.kill('SIGKILL')))
    await waitForEngine(() => p.seen.some((s) => /^POST .*\/containers\/create/.test(s)), 30_000, 'the create request')
    child.kill('SIGKILL')
    const result = await killProcessGracefully(child, { graceMs: 1000 })
    expect(result.containers).toEqual([expect.objectContaining({ state: 'gone' })])
    expect(result.containers[0]!.ids).toHaveLength(1)
    // Nothing left, and the name is free.
    await new Promise((res) => setTimeout(res, 2000))
    expect(containersWith(engine, label)).toEqual([])
    const again = nodeSpawn(engine.bin, ['create', '--name', name, '--label', label, engine.image, 'true'], { env: engine.env, stdio: 'ignore' })
    expect(await new Promise((res) => again.once('exit', res))).toBe(0)
  }, 60_000)

  it("four silent endpoints at the host's exit: the backstop ends by its total bound, not one bound per endpoint", async () => {
    label = testLabel()
    dir = mkdtempSync(join(tmpdir(), 'reapkit-hang-'))
    const sockets: Socket[] = []
    const hosts: string[] = []
    for (let i = 0; i < 4; i++) {
      const server = createNetServer((c) => void sockets.push(c)) // accepts, never answers
      const sock = join(dir, `silent-${i}.sock`)
      await new Promise<void>((res) => server.listen(sock, res))
      cleanup.push(() => new Promise<void>((res) => (sockets.forEach((c) => c.destroy()), server.close(() => res()))))
      hosts.push(`unix://${sock}`)
    }
    const host = spawnFixture('container-exit-hosts.cjs', [engine.bin, engine.image, ...hosts], { env: engine.env, stdio: ['pipe', 'pipe', 'ignore'] })
    let out = ''
    host.stdout!.on('data', (d: Buffer) => (out += String(d)))
    await waitForEngine(() => out.includes('ready'), 30_000, 'the host')
    await new Promise((res) => setTimeout(res, 500)) // the clients are at their endpoints
    const started = performance.now()
    host.stdin!.write('go\n')
    expect((await exitOf(host, 60_000)).code).toBe(0)
    // The total bound is 5 s; before, 3 s per endpoint: 12 s.
    expect(performance.now() - started).toBeLessThan(9_000)
  }, 90_000)
})
