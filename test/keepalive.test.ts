import { describe, expect, it } from 'vitest'
import { createKeepalive, ShuttingDownError, SHUTTING_DOWN_JSONRPC_CODE } from '../lib/index'
import { settlesWithin } from '../lib/ground/wait'
import { exitOf, isGone, jsonLines, spawnFixture, waitFor } from './helpers'

const linux = process.platform === 'linux'

/**
 * The server's stderr, and its last line parsed as the report. The report is read at the pipe's end
 * (bounded): a process seen to exit, or to be a zombie, may still have its last line in the pipe,
 * not yet read by this event loop (on a busy machine, often).
 */
function stderrOf(child: ReturnType<typeof spawnFixture>) {
  let text = ''
  child.stderr!.setEncoding('utf8')
  child.stderr!.on('data', (d: string) => (text += d))
  const ended = new Promise<void>((res) => child.stderr!.once('end', res))
  return {
    report: async () => {
      if (!(await settlesWithin(ended, 10_000))) throw new Error(`the server's stderr did not end; so far: ${JSON.stringify(text)}`)
      return JSON.parse(text.trim().split('\n').pop()!)
    },
    text: () => text,
  }
}

function server(env: NodeJS.ProcessEnv = {}, args: string[] = []) {
  const child = spawnFixture('keepalive-server.cjs', args, { stdio: ['pipe', 'pipe', 'pipe'], env })
  return { child, out: jsonLines(child.stdout!), err: stderrOf(child) }
}

describe('createKeepalive (a real server process)', () => {
  it('SIGTERM: work in flight finishes, new work is refused with the documented code, exit 0, one report line', async () => {
    const { child, out, err } = server()
    await out.next((m) => m.event === 'ready')
    child.stdin!.write('work 400\n')
    await out.next((m) => m.event === 'started' && m.id === 1)
    child.kill('SIGTERM')
    await new Promise((r) => setTimeout(r, 50))
    child.stdin!.write('work 10\n')
    const refused = await out.next((m) => m.event === 'refused', 10_000, 'the refusal')
    expect(refused).toMatchObject({ id: 2, name: 'ShuttingDownError', code: 'ERR_REAPKIT_SHUTTING_DOWN', jsonRpcCode: SHUTTING_DOWN_JSONRPC_CODE })
    await out.next((m) => m.event === 'done' && m.id === 1, 10_000, 'the slow work to complete')
    await out.next((m) => m.event === 'hook', 10_000, 'the onShutdown hook')
    expect(await exitOf(child)).toEqual({ code: 0, signal: null })
    expect(await err.report()).toMatchObject({ event: 'shutdown', reason: 'SIGTERM', served: 1, drained: 1, abandoned: 0, refused: 1 })
    expect(out.seen.every((m) => m.event !== 'shutdown')).toBe(true) // the report never goes to stdout
  })

  it('a handler that never finishes is abandoned at the grace: exit 1, abandoned 1', async () => {
    const { child, out, err } = server({ GRACE_MS: '300' })
    await out.next((m) => m.event === 'ready')
    child.stdin!.write('hang\n')
    await out.next((m) => m.event === 'started')
    const t0 = Date.now()
    child.kill('SIGTERM')
    expect(await exitOf(child)).toEqual({ code: 1, signal: null })
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290) // the grace was given in full
    expect(await err.report()).toMatchObject({ reason: 'SIGTERM', drained: 0, abandoned: 1 })
  })

  it('stdin end starts the drain; a later SIGTERM does not cut it short', async () => {
    const { child, out, err } = server()
    await out.next((m) => m.event === 'ready')
    child.stdin!.write('work 300\n')
    await out.next((m) => m.event === 'started')
    child.stdin!.end()
    await new Promise((r) => setTimeout(r, 50))
    child.kill('SIGTERM')
    await out.next((m) => m.event === 'done', 10_000, 'the work to complete')
    expect(await exitOf(child)).toEqual({ code: 0, signal: null })
    expect(await err.report()).toMatchObject({ reason: 'stdin-end', drained: 1, abandoned: 0 })
  })

  it('a second SIGINT exits at once (130), work still in flight', async () => {
    const { child, out } = server({ GRACE_MS: '20000' })
    await out.next((m) => m.event === 'ready')
    child.stdin!.write('hang\n')
    await out.next((m) => m.event === 'started')
    child.kill('SIGINT')
    await new Promise((r) => setTimeout(r, 100))
    expect(child.exitCode).toBe(null) // the first one drains
    child.kill('SIGINT')
    expect(await exitOf(child, 5000)).toEqual({ code: 130, signal: null })
  })

  it.runIf(linux)('the host is SIGKILLed: the server notices its parent died, drains and exits', async () => {
    const { child: host, out, err } = server({}, ['intermediate'])
    const ready = await out.next((m) => m.event === 'ready')
    host.stdin!.write('work 300\n')
    await out.next((m) => m.event === 'started')
    host.kill('SIGKILL')
    await out.next((m) => m.event === 'done', 10_000, 'the work to complete')
    // It exits by itself (a zombie under its new parent counts as gone: PID 1 here reaps lazily).
    await waitFor(() => isGone(ready.pid), 10_000, 'the server to exit')
    expect(await err.report()).toMatchObject({ reason: 'parent-death', drained: 1, abandoned: 0 })
  })
})

describe('createKeepalive (in process)', () => {
  it('onDrain() listeners, abandonSignal before any hook, extendReport() adds fields but never rewrites its own', async () => {
    const order: string[] = []
    const k = createKeepalive({ exit: false, signals: false, stdin: false, parentDeath: false, finalLine: false, graceMs: 100 })
    try {
      k.onDrain((reason) => void order.push(`drain:${reason}`))
      k.abandonSignal.addEventListener('abort', () => void order.push('abandon'))
      k.onShutdown(() => void order.push('hook'))
      k.extendReport(() => ({ sessions: 3, served: 999 }))
      k.extendReport(() => {
        throw new Error('a broken extension does not break the report')
      })
      expect(() => k.onDrain('x' as never)).toThrow(TypeError)
      expect(() => k.extendReport(7 as never)).toThrow(TypeError)
      k.begin() // never done: abandoned at the grace
      const report = await k.shutdown('test')
      expect(report).toMatchObject({ reason: 'test', served: 0, abandoned: 1, sessions: 3 })
      expect(Object.keys(report).slice(0, 7)).toEqual(['event', 'reason', 'served', 'drained', 'abandoned', 'refused', 'elapsedMs'])
      let late = ''
      k.onDrain((reason) => void (late = reason)) // after the drain began: called at once
      await new Promise((r) => setImmediate(r))
      expect(late).toBe('test')
      expect(order).toEqual(['drain:test', 'abandon', 'hook'])
    } finally {
      k.dispose()
    }
  })

  it('tracks run() and begin()/done(), refuses after shutdown(), reports at any time', async () => {
    const drains: string[] = []
    const k = createKeepalive({
      exit: false,
      signals: false,
      stdin: false,
      parentDeath: false,
      finalLine: false,
      graceMs: 1000,
      onDrain: (reason) => drains.push(reason),
    })
    try {
      expect(await k.run(() => 42)).toBe(42)
      const done = k.begin()
      expect(k.stats).toMatchObject({ inFlight: 1, served: 1 })
      const closing = k.shutdown('test')
      expect(k.state).toBe('draining')
      await expect(k.run(() => 1)).rejects.toBeInstanceOf(ShuttingDownError)
      expect(() => k.begin()).toThrow(ShuttingDownError)
      done()
      done() // idempotent
      const report = await closing
      expect(report).toMatchObject({ event: 'shutdown', reason: 'test', served: 2, drained: 1, abandoned: 0, refused: 2 })
      expect(await k.closed).toEqual(report)
      expect(k.state).toBe('closed')
      await k.shutdown('again') // idempotent: the same report, onDrain not called again
      expect(drains).toEqual(['test'])
    } finally {
      k.dispose()
    }
  })
})
