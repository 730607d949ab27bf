// reapkit/mcp's mcpPingHealthCheck under a real Supervisor (issue 20 item 2): a healthy MCP server
// answers every ping and is left alone; a wedged one (answers `initialize`, then reads nothing more,
// pipes held) fails its pings, is stopped with the bounded close and started again by its restart
// policy. Both SDK lines' clients, connected over each supervised child's own pipes.
import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { type HealthCheckContext, Supervisor } from '../lib/index'
import { mcpPingHealthCheck, type McpPingClient } from '../lib/mcp'
import { DIST, FIXTURES, isGone, jsonLines, waitFor } from './helpers'
import { fixtureServer, type LineNumber, newClient, pipeTransport } from './mcp-sdk'
import { cleanupAfterEach } from './supervisor-cleanup'

const posix = process.platform !== 'win32'
const { supervise: tracked, tempDir } = cleanupAfterEach()

type Line = LineNumber
const INFO = { name: 'reapkit-health-test', version: '1.0.0' }

/** A Client of `line` over the child's pipes, closed when its child exits. */
async function connect(line: Line, child: ChildProcess): Promise<McpPingClient> {
  const client = newClient(line, INFO)
  const transport = pipeTransport(line, child)
  child.once('exit', () => void client.close().catch(() => {}))
  await client.connect(transport)
  return client
}

type Failure = { pid: number; error: unknown; inARow: number }

/**
 * A supervisor whose every incarnation gets a client of `line` (by child), tracked for cleanup.
 * `connected` holds the pids whose client has connected; `log` the answered pings and failures in
 * order. `failuresAfterAnswer(pid)`: the failures of pid after its first answered ping (on a loaded
 * machine, a check that waited for a slow start's connection may time out: not the server's fault).
 */
function supervise(line: Line) {
  const { sup } = tracked() // every incarnation's group tracked for the cleanup
  const clients = new Map<ChildProcess, Promise<McpPingClient>>()
  const connected = new Set<number>()
  const failures: Failure[] = []
  const log: Array<{ pid: number; failure?: Failure }> = []
  sup.on('spawn', (_record, child) => {
    const client = connect(line, child)
    client.then(() => connected.add(child.pid!), () => {}) // a child gone before it answered: its checks fail, nothing more
    clients.set(child, client)
  })
  sup.on('health-fail', (record, error, inARow) => {
    const failure = { pid: record.pid, error, inARow }
    failures.push(failure)
    log.push({ pid: record.pid, failure })
  })
  const pings = new Map<number, number>() // answered pings by pid
  const ping = mcpPingHealthCheck(({ child }) => clients.get(child))
  const check = async (context: HealthCheckContext) => {
    await ping(context)
    pings.set(context.child.pid!, (pings.get(context.child.pid!) ?? 0) + 1)
    log.push({ pid: context.child.pid! })
  }
  const failuresAfterAnswer = (pid: number) => {
    const answered = log.findIndex((e) => e.pid === pid && !e.failure)
    return answered < 0 ? [] : log.slice(answered).filter((e) => e.pid === pid && e.failure).map((e) => e.failure!)
  }
  return { sup, clients, connected, failures, failuresAfterAnswer, pings, check }
}

/** A check's context for calling a check directly (no process is touched before the source is asked). */
const contextOf = (signal: AbortSignal) => ({ child: { pid: 1 } as ChildProcess, record: {} as HealthCheckContext['record'], signal })

describe.runIf(posix).each([1, 2] as const)('mcpPingHealthCheck with the SDK %i.x client', (line) => {
  it('a healthy MCP server answers every ping: no failure, no stop, no restart', async () => {
    const { sup, failuresAfterAnswer, pings, check } = supervise(line)
    const child = sup.spawn(process.execPath, [fixtureServer(line)], {
      requestId: 'healthy',
      stdio: ['pipe', 'pipe', 'inherit'],
      env: { ...process.env, REAPKIT_DIST: DIST },
      restart: 'on-failure',
      health: { check, intervalMs: 100, timeoutMs: 5000, failures: 2 },
    })
    await waitFor(() => (pings.get(child.pid!) ?? 0) >= 5, 30_000, '5 answered pings')
    expect(failuresAfterAnswer(child.pid!)).toEqual([])
    const record = sup.get('healthy')!
    expect(record.status).toBe('running')
    expect(record.pid).toBe(child.pid)
    expect(record.restarts).toBe(0)
    expect(isGone(child.pid!)).toBe(false)
  })

  it('takes a Client itself (a child that is not restarted): its pings reach that server', async () => {
    const { sup } = tracked()
    let connected: Promise<McpPingClient> | undefined
    sup.on('spawn', (_r, child) => {
      connected = connect(line, child)
    })
    const failures: unknown[] = []
    sup.on('health-fail', (_r, error) => failures.push(error))
    // The Client the host connects in 'spawn', before the first check runs.
    const child = sup.spawn(process.execPath, [fixtureServer(line)], {
      requestId: 'one',
      stdio: ['pipe', 'pipe', 'inherit'],
      env: { ...process.env, REAPKIT_DIST: DIST },
      health: {
        check: async (context) => mcpPingHealthCheck(await connected!)(context).then(() => answered++),
        intervalMs: 100,
        timeoutMs: 5000,
        failures: 2,
      },
    })
    let answered = 0
    await waitFor(() => answered >= 3, 20_000, '3 answered pings')
    expect(failures).toEqual([])
    expect(sup.get('one')!.status).toBe('running')
    expect(isGone(child.pid!)).toBe(false)
  })

  it('a Client given directly, with a restart policy: the restarted child fails with ERR_REAPKIT_MCP_STALE_CLIENT, not "Not connected"', async () => {
    const { sup } = tracked()
    const client = newClient(line, INFO)
    let connected = false
    sup.once('spawn', (_r, child) => {
      // The one Client, connected to the first child only (the footgun: no new Client per incarnation).
      const transport = pipeTransport(line, child)
      child.once('exit', () => void client.close().catch(() => {}))
      client.connect(transport).then(() => (connected = true), () => {})
    })
    const failures: Failure[] = []
    sup.on('health-fail', (record, error, inARow) => failures.push({ pid: record.pid, error, inARow }))
    const answered = new Map<number, number>()
    const ping = mcpPingHealthCheck(client)
    const first = sup.spawn(process.execPath, [fixtureServer(line)], {
      requestId: 'direct',
      stdio: ['pipe', 'pipe', 'inherit'],
      env: { ...process.env, REAPKIT_DIST: DIST },
      restart: 'on-failure',
      backoff: { initialMs: 50, jitter: 0 },
      // Failures are only counted here, never acted on: the child's checks before its Client connects fail too.
      health: {
        check: async (context) => {
          if (!connected) return
          await ping(context)
          answered.set(context.child.pid!, (answered.get(context.child.pid!) ?? 0) + 1)
        },
        intervalMs: 100,
        timeoutMs: 5000,
        failures: 1000,
      },
    })
    await waitFor(() => (answered.get(first.pid!) ?? 0) >= 2, 30_000, 'the first child to answer 2 pings')
    first.kill('SIGKILL')
    await waitFor(() => failures.some((f) => f.pid !== first.pid), 30_000, 'a check of the restarted child')
    const second = failures.find((f) => f.pid !== first.pid)!
    expect(second.pid).toBe(sup.get('direct')!.pid)
    expect(second.error).toMatchObject({ code: 'ERR_REAPKIT_MCP_STALE_CLIENT', message: expect.stringContaining('pass a function') })
    expect(answered.get(second.pid) ?? 0).toBe(0)
  })

  it('a wedged server that still holds its pipes fails N pings, is stopped with the bounded close and restarted by its policy', async () => {
    const dir = tempDir('reapkit-mcp-health-')
    const { sup, connected, failures, failuresAfterAnswer, pings, check } = supervise(line)
    const first = sup.spawn(process.execPath, [join(FIXTURES, 'stdio-peer.cjs'), 'wedge', join(dir, 'starts')], {
      requestId: 'wedged',
      stdio: ['pipe', 'pipe', 'ignore'],
      restart: 'on-failure',
      backoff: { initialMs: 50, jitter: 0 },
      // The next incarnation's first checks wait for its client: it is stopped only if 3 of them in a
      // row outlast the timeout, which leaves a loaded machine ~9 s to start a node process.
      health: { check, intervalMs: 100, timeoutMs: 3000, failures: 3 },
    })
    // The first incarnation answered `initialize`: the wedge comes after.
    await waitFor(() => connected.has(first.pid!), 30_000, 'the first incarnation\'s client to connect')
    await waitFor(() => sup.get('wedged')?.restarts === 1 && sup.get('wedged')?.status === 'running', 45_000, 'one restart')
    const record = sup.get('wedged')!
    const second = record.pid
    await waitFor(() => (pings.get(second) ?? 0) >= 3, 30_000, 'the new incarnation to answer 3 pings')

    expect(pings.get(first.pid!) ?? 0, 'the wedged server answered no ping').toBe(0)
    const firstFailures = failures.filter((f) => f.pid === first.pid)
    expect(firstFailures.map((f) => f.inARow)).toEqual([1, 2, 3])
    for (const f of firstFailures) expect((f.error as { code?: string }).code, String(f.error)).toBe('ETIMEDOUT')
    expect(failuresAfterAnswer(second), 'the restarted server is healthy').toEqual([])
    expect(sup.get('wedged')!.restarts).toBe(1)

    const [wedged, restarted] = sup.get('wedged')!.incarnations
    expect(wedged!.pid).toBe(first.pid)
    // The bounded close: stdin end is never read by a wedged server, so SIGTERM ended it.
    expect(wedged!.signal).toBe('SIGTERM')
    expect(restarted!.reason).toBe('unhealthy')
    expect(restarted!.pid).toBe(second)
    expect(isGone(first.pid!)).toBe(true)
    expect(isGone(second)).toBe(false)
  })
  it('a ping past the check\'s timeout is cancelled in the protocol (the check\'s signal reaches the SDK request)', async () => {
    const { sup, connected, failures, check } = supervise(line)
    let seen: ReturnType<typeof jsonLines> | undefined
    sup.once('spawn', (_r, child) => (seen = jsonLines(child.stderr!)))
    // Checks pass until the client has connected (however long a loaded machine takes): every
    // failure counted is then a ping sent and left unanswered.
    const afterConnect = async (context: HealthCheckContext) => {
      if (connected.has(context.child.pid!)) await check(context)
    }
    sup.spawn(process.execPath, [join(FIXTURES, 'stdio-peer.cjs'), 'mute'], {
      requestId: 'mute',
      stdio: 'pipe',
      health: { check: afterConnect, intervalMs: 200, timeoutMs: 1000, failures: 2 },
    })
    await waitFor(() => sup.get('mute')?.status === 'terminated', 30_000, 'the unhealthy child to be stopped')
    expect(failures.map((f) => f.inARow)).toEqual([1, 2])
    for (const f of failures) expect((f.error as { code?: string }).code, String(f.error)).toBe('ETIMEDOUT')
    const got = () => seen!.seen.filter((m) => m.got)
    const pings = () => got().filter((m) => m.got === 'ping').map((m) => m.id)
    const cancelled = () => got().filter((m) => m.got === 'notifications/cancelled').map((m) => m.requestId)
    // Its stderr may still be on its way after the exit: wait, bounded, for a cancel of each ping.
    await waitFor(() => pings().length >= 2 && cancelled().length >= pings().length, 10_000, `a cancel for each ping: ${JSON.stringify(got())}`).catch(() => {})
    expect(pings().length, 'pings sent').toBe(2)
    expect(cancelled()).toEqual(pings())
  })
})

describe.runIf(posix)('mcpPingHealthCheck', () => {
  it('fails, with ERR_REAPKIT_MCP_NO_CLIENT, when no client is connected to the child it checks', async () => {
    const { sup } = tracked()
    const errors: unknown[] = []
    sup.on('health-fail', (_r, error) => errors.push(error))
    const child = sup.spawn('sleep', ['1000'], {
      requestId: 'no-client',
      stdio: 'pipe',
      health: { check: mcpPingHealthCheck(() => undefined), intervalMs: 50, timeoutMs: 1000, failures: 1 },
    })
    await waitFor(() => sup.get('no-client')?.status === 'terminated', 20_000, 'the unhealthy child to be stopped')
    expect((errors[0] as { code?: string }).code).toBe('ERR_REAPKIT_MCP_NO_CLIENT')
    expect(String(errors[0])).toContain(`pid ${child.pid}`)
    expect(isGone(child.pid!)).toBe(true)
  })

  it('a client source that never resolves is given up when the check\'s signal aborts', async () => {
    const controller = new AbortController()
    const check = mcpPingHealthCheck(() => new Promise<undefined>(() => {}))
    const settled = check(contextOf(controller.signal)).then(() => 'resolved', (error: unknown) => error)
    setTimeout(() => controller.abort(), 50)
    const outcome = await Promise.race([settled, new Promise((r) => setTimeout(() => r('still pending 10 s after the abort'), 10_000))])
    expect(outcome).toEqual(expect.objectContaining({ name: 'AbortError' }))
  })

  it('under a Supervisor, a check whose source never resolves ends at its timeout: the next check asks the source again', async () => {
    const { sup } = tracked()
    const errors: unknown[] = []
    sup.on('health-fail', (_r, error) => errors.push(error))
    let asked = 0
    const source = () => {
      asked++
      return new Promise<undefined>(() => {})
    }
    sup.spawn('sleep', ['1000'], {
      requestId: 'pending',
      stdio: 'pipe',
      health: { check: mcpPingHealthCheck(source), intervalMs: 50, timeoutMs: 200, failures: 3 },
    })
    await waitFor(() => sup.get('pending')?.status === 'terminated', 20_000, 'the unhealthy child to be stopped')
    expect(errors.map((e) => (e as { code?: string }).code)).toEqual(['ETIMEDOUT', 'ETIMEDOUT', 'ETIMEDOUT'])
    // A check still waiting on its source would leave the next ones refused ("still running") unasked.
    expect(asked).toBeGreaterThanOrEqual(3)
  })

  it('an aborted check does not call the client source', async () => {
    let asked = 0
    const check = mcpPingHealthCheck(() => {
      asked++
      return undefined
    })
    await expect(check(contextOf(AbortSignal.abort()))).rejects.toMatchObject({ name: 'AbortError' })
    expect(asked).toBe(0)
  })

  it('refuses what is neither a client nor a function, before anything starts', () => {
    for (const bad of [undefined, null, 42, 'client', {}, { ping: 1 }]) {
      expect(() => mcpPingHealthCheck(bad as never), String(bad)).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }))
    }
  })
})
