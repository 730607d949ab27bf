// Issue 31 item 3, readiness and start order, with real processes: a child is 'starting' until it
// is ready (a stdout line, a check such as an HTTP probe or its health check), within a bound and
// with a clear failure; `after` orders starts (start() waits) and shutdownAll() stops in reverse.
// Every child is tracked for the after-test cleanup; every wait is bounded.
import { createServer } from 'node:net'
import { describe, expect, it } from 'vitest'
import { httpProbe, type StopReason } from '../lib/index'
import { cleanupAfterEach, settled } from './supervisor-cleanup'

const posix = process.platform !== 'win32'
const { supervise } = cleanupAfterEach()

/** A free TCP port on 127.0.0.1 (listened on once, then released). */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res))
  const { port } = server.address() as { port: number }
  await new Promise((res) => server.close(res))
  return port
}

/** Every typed event, as "name:requestId", in order. */
function timeline(sup: ReturnType<typeof supervise>['sup']): string[] {
  const seen: string[] = []
  for (const name of ['spawn', 'ready', 'start-failed', 'terminate', 'exit'] as const) {
    sup.on(name, (record: { requestId: string | number | null }) => seen.push(`${name}:${record.requestId}`))
  }
  return seen
}

describe.runIf(posix)('Supervisor readiness', () => {
  it("a stdout line: 'starting' until the line comes, then a 'ready' event and 'running'", async () => {
    const { sup } = supervise()
    const seen = timeline(sup)
    const statuses: string[] = []
    sup.on('status', (r) => statuses.push(r.status))
    sup.spawn('sh', ['-c', 'sleep 0.3; echo "booting"; echo "listening on 4242"; exec sleep 1000'], {
      requestId: 'srv',
      ready: { stdout: /listening on \d+/, timeoutMs: 20_000 },
    })
    expect(sup.get('srv')!.status).toBe('starting')
    expect(sup.metrics().children.starting).toBe(1)
    await settled(sup, 'srv', 'running')
    expect(seen).toEqual(['spawn:srv', 'ready:srv'])
    expect(statuses).toEqual(['starting', 'running'])
    expect(sup.get('srv')!.error).toBe(null)
  })

  it('not ready within the bound: a clear failure (start-failed, ERR_REAPKIT_NOT_READY), a stop with reason not-ready, start() rejects', async () => {
    const { sup } = supervise()
    const seen = timeline(sup)
    const reasons: StopReason[] = []
    sup.on('terminate', (_r, _report, reason) => reasons.push(reason))
    const started = sup.start('sleep', ['1000'], { requestId: 'mute', ready: { stdout: 'never printed', timeoutMs: 300 } })
    await expect(started).rejects.toMatchObject({ code: 'ERR_REAPKIT_NOT_READY' })
    const r = sup.get('mute')!
    expect(r.status).toBe('terminated')
    expect(r.error).toMatchObject({ code: 'ERR_REAPKIT_NOT_READY', message: 'The child was not ready within 300 ms' })
    expect(reasons).toEqual(['not-ready'])
    expect(seen.filter((e) => !e.startsWith('exit'))).toEqual(['spawn:mute', 'start-failed:mute', 'terminate:mute'])
    expect(sup.metrics()).toMatchObject({ startFailures: 1, stopsByReason: { 'not-ready': 1 } })
  })

  it('a check (an HTTP probe) makes it ready; start() resolves then, its health checks begin only after', async () => {
    const { sup } = supervise()
    const port = await freePort()
    let healthChecks = 0
    const server = `setTimeout(() => require('http').createServer((q, s) => s.end('ok')).listen(${port}, '127.0.0.1'), 300); setInterval(() => {}, 1000)`
    const record = await sup.start(process.execPath, ['-e', server], {
      requestId: 'http',
      stdio: 'ignore',
      ready: { check: httpProbe(`http://127.0.0.1:${port}/`), intervalMs: 50, timeoutMs: 20_000 },
      health: { check: () => void healthChecks++, intervalMs: 50 },
    })
    expect(record.status).toBe('running')
    expect(healthChecks).toBe(0) // none while it was starting
    await expect.poll(() => healthChecks, { timeout: 10_000 }).toBeGreaterThan(0)
  })

  it('each check attempt has its own bound: a first request never answered does not use up the readiness bound', async () => {
    const { sup } = supervise()
    const port = await freePort()
    // Its first request is never answered (warming up), every later one is.
    const server = `let n = 0; require('http').createServer((q, s) => { if (n++ > 0) s.end('ok') }).listen(${port}, '127.0.0.1')`
    const record = await sup.start(process.execPath, ['-e', server], {
      requestId: 'warming',
      stdio: 'ignore',
      ready: { check: httpProbe(`http://127.0.0.1:${port}/`), intervalMs: 50, attemptTimeoutMs: 300, timeoutMs: 15_000 },
    })
    expect(record.status).toBe('running')
    // With check 'health', the health check's timeoutMs bounds each attempt; one that ignores its signal is not waited for.
    const signals: AbortSignal[] = []
    let calls = 0
    await expect(sup.start('sleep', ['1000'], {
      requestId: 'hung-once',
      health: { check: ({ signal }) => (signals.push(signal), calls++ === 0 ? new Promise(() => {}) : undefined), timeoutMs: 300, intervalMs: 60_000 },
      ready: { check: 'health', intervalMs: 50, timeoutMs: 15_000 },
    })).resolves.toMatchObject({ status: 'running' })
    expect(calls).toBeGreaterThanOrEqual(2)
    expect(signals[0]!.aborted).toBe(true) // the hung attempt was told to end
  })

  it('a child that exits before it is ready is not ready (start() rejects), and its record says why', async () => {
    const { sup } = supervise()
    const seen = timeline(sup)
    const errors: Error[] = []
    sup.on('start-failed', (_r, error) => errors.push(error))
    await expect(sup.start('sh', ['-c', 'exit 4'], { requestId: 'quits', ready: { stdout: 'ok' } })).rejects.toMatchObject({ code: 'ERR_REAPKIT_NOT_READY' })
    expect(sup.get('quits')).toMatchObject({ status: 'exited', exitCode: 4, error: { code: 'ERR_REAPKIT_NOT_READY' } })
    // A failed start, as a ready timeout is: a 'start-failed' event (after its exit), counted.
    expect(seen).toEqual(['spawn:quits', 'exit:quits', 'start-failed:quits'])
    expect(errors[0]).toMatchObject({ code: 'ERR_REAPKIT_NOT_READY', message: 'It exited before it was ready (code 4, signal null)' })
    expect(sup.metrics().startFailures).toBe(1)
    // A start that fails before anything runs rejects with the spawn's own code.
    await expect(sup.start('/nonexistent/reapkit-no-such-program', [], { requestId: 'missing' })).rejects.toMatchObject({ code: 'ENOENT' })
    expect(sup.get('missing')!.status).toBe('start-failed')
  })

  it('a ready.stdout RegExp with g or y is tested per line: each child and each incarnation reads its own line', async () => {
    const { sup } = supervise()
    const global = /ready/g
    const sticky = /ready/y
    const line = ['-c', 'echo ready; exec sleep 1000']
    for (const [id, stdout] of [['g1', global], ['g2', global], ['y1', sticky], ['y2', sticky]] as const) {
      await expect(sup.start('sh', line, { requestId: id, ready: { stdout, timeoutMs: 20_000 } })).resolves.toMatchObject({ status: 'running' })
    }
    expect([global.lastIndex, sticky.lastIndex]).toEqual([0, 0]) // the caller's RegExp is not used
    // A restarted child: its second incarnation reads its line with the same spec.
    const readies: number[] = []
    sup.on('ready', (r) => r.requestId === 'again' && readies.push(r.restarts))
    await sup.start('sh', ['-c', 'echo ready; sleep 0.2; exit 3'], { requestId: 'again', restart: 'on-failure', backoff: { initialMs: 10 }, ready: { stdout: /ready/g, timeoutMs: 20_000 } })
    await expect.poll(() => readies.length, { timeout: 20_000 }).toBeGreaterThanOrEqual(2)
    expect(readies.slice(0, 2)).toEqual([0, 1])
    await sup.terminate('again')
  })

  it('bad ready and after options are refused before anything starts', async () => {
    const { sup } = supervise()
    const bad: Array<[object, string]> = [
      [{ ready: { stdout: 42 } }, 'ERR_INVALID_ARG_TYPE'],
      [{ ready: {} }, 'ERR_INVALID_ARG_VALUE'],
      [{ ready: { check: 'health' } }, 'ERR_INVALID_ARG_COMBINATION'],
      [{ ready: { stdout: 'x' }, stdio: 'ignore' }, 'ERR_INVALID_ARG_COMBINATION'],
      [{ ready: { stdout: 'x', timeoutMs: -1 } }, 'ERR_OUT_OF_RANGE'],
      [{ ready: { check: () => {}, attemptTimeoutMs: 0 } }, 'ERR_OUT_OF_RANGE'],
      [{ ready: { stdout: 'x', attemptTimeoutMs: 100 } }, 'ERR_INVALID_ARG_COMBINATION'],
      [{ after: 'db' }, 'ERR_INVALID_ARG_TYPE'],
      [{ requestId: NaN }, 'ERR_OUT_OF_RANGE'], // JSON writes it null: no one could name it back
      [{ requestId: Infinity }, 'ERR_OUT_OF_RANGE'],
      [{ requestId: -Infinity }, 'ERR_OUT_OF_RANGE'],
      [{ after: ['nobody'] }, 'ERR_REAPKIT_NOT_SUPERVISED'],
    ]
    for (const [options, code] of bad) {
      expect(() => sup.spawn('sleep', ['1000'], options as never), JSON.stringify(options)).toThrow(expect.objectContaining({ code }))
      await expect(sup.start('sleep', ['1000'], options as never)).rejects.toMatchObject({ code })
    }
    expect(() => httpProbe('ftp://example.invalid/')).toThrow(TypeError)
    expect(() => sup.spawn('sleep', ['1000'], { requestId: NaN })).toThrow(RangeError)
    expect(sup.list()).toEqual([])
  })
})

describe.runIf(posix)('Supervisor start order (after)', () => {
  it('start() waits for what it starts after to be ready; shutdownAll() stops in reverse order', async () => {
    const { sup } = supervise({ closeTimeoutMs: 2000, graceMs: 2000 })
    const seen = timeline(sup)
    // db: ready after a moment, leaves at once on stdin end. app: after db; slow to leave (0.5 s),
    // so a parallel stop would end db first.
    const db = sup.start('sh', ['-c', 'sleep 0.3; echo ready; exec cat > /dev/null'], { requestId: 'db', ready: { stdout: 'ready' } })
    expect(() => sup.spawn('sleep', ['1000'], { requestId: 'early', after: ['db'] })).toThrow(expect.objectContaining({ code: 'ERR_REAPKIT_NOT_READY' }))
    const app = sup.start('sh', ['-c', 'cat > /dev/null; sleep 0.5'], { requestId: 'app', after: ['db'] })
    expect(sup.get('app')).toBe(undefined) // not started while db is starting
    await Promise.all([db, app])
    expect(seen).toEqual(['spawn:db', 'ready:db', 'spawn:app'])
    seen.length = 0
    const reports = await sup.shutdownAll()
    expect(reports.map((r) => r.requestId)).toEqual(['db', 'app'])
    expect(seen.filter((e) => e.startsWith('terminate'))).toEqual(['terminate:app', 'terminate:db'])
    expect(sup.get('db')!.status).toBe('terminated')
    expect(sup.get('app')!.status).toBe('terminated')
  })

  it('a dependency that ends before it is ready fails the start (ERR_REAPKIT_DEPENDENCY_FAILED) and nothing starts', async () => {
    const { sup } = supervise()
    void sup.start('sh', ['-c', 'exit 1'], { requestId: 'db', ready: { stdout: 'ready' } }).catch(() => {})
    await expect(sup.start('sleep', ['1000'], { requestId: 'app', after: ['db'] })).rejects.toMatchObject({ code: 'ERR_REAPKIT_DEPENDENCY_FAILED' })
    expect(sup.get('app')).toBe(undefined)
  })
})
