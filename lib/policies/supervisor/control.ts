/**
 * A Supervisor's control socket: a Unix socket that answers `reapkit ps`, `logs`, `restart`, `stop`
 * and `top` (lib/cli/control.ts) for its own user only. Opt-in: nothing listens unless
 * openControlSocket() is called.
 *
 * Who may connect decides who may stop the children, so the socket is trusted as the state file is
 * (state-file-trust.ts): its folder and every folder above belong to this user or root and nobody
 * else can write them; the socket file is made 0600; and each connection's peer, as the kernel
 * recorded it at connect() (SO_PEERCRED on Linux, getpeereid elsewhere), must be this user (or
 * root), or it gets one refusal line and is closed before a request is read.
 *
 * The wire: one JSON request line from the client, then JSON lines back (`{"ok":true,...}` or
 * `{"ok":false,"code","message"}`); `logs` with `follow` streams `{"page":...}` lines until the
 * child is over or the client leaves.
 */
import { chmodSync, lstatSync, readFileSync, unlinkSync } from 'node:fs'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { ReapkitError, systemError, typeError } from '../../ground/errors'
import { type Logger, logEvent, silentLogger } from '../../ground/logger'
import { nativeBinding } from '../../ground/native'
import { describe, validateOptions } from '../../ground/validate'
import { checkStateFolder } from '../state-file-trust'
import { CONTROL_SOCKET, checkSocketPathLength, type ControlRow, type ControlSnapshot } from './control-wire'
import type { OutputPage } from './output'
import type { ProcessRecord } from './record'
import type { Supervisor } from './supervisor'

export type { ControlRow, ControlSnapshot } from './control-wire'

/** A request line longer than this is refused (a request is a few dozen bytes). */
const MAX_REQUEST = 4096
/** A client that sends no request within this is dropped. */
const REQUEST_TIMEOUT_MS = 5000
/** A `logs -f` client that reads nothing for this long is dropped. */
const FOLLOWER_STALL_MS = 30_000
/** How long the probe of a socket already at the name may take to tell live from stale. */
const STALE_PROBE_MS = 2000

export interface ControlSocketOptions {
  /** Where the socket goes: beside the state file, e.g. `/run/myhost/control.sock`. */
  path: string
  /** The host's drain state, shown by `ps` and `top` (e.g. `() => keepalive.state`); without it, '-'. */
  drainState?: () => string
  logger?: Logger
}

export interface ControlSocket {
  readonly path: string
  /** Stops listening, ends every connection (a `logs -f` included) and removes the socket file. */
  close(): Promise<void>
}

/** Opens the control socket of `sup` (see the top of this file). */
export async function openControlSocket(sup: Supervisor, options: ControlSocketOptions): Promise<ControlSocket> {
  const o = validateOptions(options)
  if (typeof o.path !== 'string' || o.path === '') throw typeError('ERR_INVALID_ARG_TYPE', `The "path" option must be a non-empty string. Received ${describe(o.path)}`)
  if (o.drainState !== undefined && typeof o.drainState !== 'function') throw typeError('ERR_INVALID_ARG_TYPE', 'The "drainState" option must be a function')
  checkSocketPathLength(o.path)
  if (process.platform === 'win32' || !nativeBinding()?.peerCredentials) {
    throw systemError('ENOTSUP', 'openControlSocket', 'A control socket needs a Unix socket and the addon (to learn who connected)')
  }
  const logger = o.logger ?? silentLogger
  const path = checkStateFolder(o.path, CONTROL_SOCKET)
  checkSocketPathLength(path) // through its real folder, which may be longer
  await clearStale(path)
  const open = new Set<Socket>()
  const stopping = new Set<string>()
  // allowHalfOpen: a client that ends its side after the request (`nc -N`) still gets the answer;
  // every path below ends or destroys the socket itself.
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    open.add(socket)
    socket.once('close', () => open.delete(socket))
    serve(sup, socket, { drainState: o.drainState, logger, stopping }).catch((err: Error) => {
      logEvent(logger, 'warn', 'control.error', { error: err.message })
      socket.destroy()
    })
  })
  let closed: Promise<void> | null = null
  const close = (): Promise<void> =>
    (closed ??= new Promise<void>((resolve) => {
      server.close(() => resolve())
      for (const s of open) s.destroy()
      try {
        unlinkSync(path)
      } catch {}
    }))
  await listen(server, path)
  try {
    chmodSync(path, 0o600)
    logEvent(logger, 'info', 'control.listening', { path })
  } catch (err) {
    await close() // a step after listen failed: nothing may keep answering at that name
    throw err
  }
  return { path, close }
}

/** A socket file left by a supervisor that died: removed. A live one, or anything else at the name, is refused. */
async function clearStale(path: string): Promise<void> {
  let st
  try {
    st = lstatSync(path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
    throw err
  }
  if (!st.isSocket()) throw new ReapkitError(CONTROL_SOCKET.code, `Refusing the control socket ${path}: something that is not a socket is at its name`)
  // Only a refused connection (or a name gone meanwhile) means nobody listens: a full backlog
  // (EAGAIN), a probe that hangs or any other error may be a live supervisor, busy.
  const answer = await new Promise<string>((resolve) => {
    const probe = connect(path)
    const done = (what: string): void => {
      clearTimeout(timer)
      probe.destroy()
      resolve(what)
    }
    const timer = setTimeout(() => done(`no answer within ${STALE_PROBE_MS} ms`), STALE_PROBE_MS)
    probe.once('connect', () => done('live'))
    probe.once('error', (err: NodeJS.ErrnoException) => done(err.code ?? 'EIO'))
  })
  if (answer === 'ENOENT') return
  if (answer !== 'ECONNREFUSED') {
    const why = answer === 'live' ? 'in use by another supervisor' : `perhaps in use by a busy supervisor (${answer})`
    throw new ReapkitError('ERR_REAPKIT_CONTROL_SOCKET_IN_USE', `The control socket ${path} is ${why}`)
  }
  unlinkSync(path)
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    // readableAll/writableAll false: the file gets the umask's mode at bind (0755 under the usual 022:
    // others cannot connect, connect() needs write permission), 0600 right after; the peer check
    // below refuses anyone who got in meanwhile.
    server.listen({ path, readableAll: false, writableAll: false }, () => {
      server.off('error', reject)
      server.unref() // the socket never keeps its host running by itself
      resolve()
    })
  })
}

interface Context {
  drainState: (() => string) | undefined
  logger: Logger
  /** Ids a `stop` or `restart` of this socket is stopping now. */
  stopping: Set<string>
}

async function serve(sup: Supervisor, socket: Socket, ctx: Context): Promise<void> {
  socket.unref()
  const fd = (socket as Socket & { _handle?: { fd?: number } })._handle?.fd
  const peer = typeof fd === 'number' && fd >= 0 ? nativeBinding()!.peerCredentials!(fd) : null
  const me = process.geteuid!()
  if (!peer || (peer.uid !== me && peer.uid !== 0)) {
    logEvent(ctx.logger, 'warn', 'control.refused', { uid: peer?.uid ?? null, pid: peer?.pid ?? null })
    socket.end(line({ ok: false, code: 'EACCES', message: `this supervisor answers uid ${me} only` }))
    return
  }
  const request = await readRequest(socket)
  if (request === null) return void socket.destroy()
  const send = (v: unknown): boolean => socket.write(line(v))
  try {
    const op = request.op
    if (op === 'ps') return void socket.end(line({ ok: true, ...snapshot(sup, ctx) }))
    if (op === 'stop' || op === 'restart') return void socket.end(line({ ok: true, result: await stopOrRestart(sup, op, request.id, ctx) }))
    if (op === 'logs') return await logs(sup, socket, request, send)
    socket.end(line({ ok: false, code: 'ERR_INVALID_ARG_VALUE', message: typeof op === 'string' ? `unknown request ${JSON.stringify(op)}` : 'unknown request' }))
  } catch (err) {
    const e = err as Error & { code?: string }
    socket.end(line({ ok: false, code: e.code ?? 'ERR_REAPKIT_CONTROL', message: e.message }))
  }
}

const line = (v: unknown): string => `${JSON.stringify(v)}\n`

/** The first line the client sends, parsed; null when it sends none, too much, or not JSON. */
function readRequest(socket: Socket): Promise<Record<string, unknown> | null> {
  return new Promise((resolve) => {
    let buf = ''
    const timer = setTimeout(() => done(null), REQUEST_TIMEOUT_MS)
    const done = (v: Record<string, unknown> | null): void => {
      clearTimeout(timer)
      socket.off('data', onData)
      socket.off('end', onEnd)
      resolve(v)
    }
    const onData = (d: Buffer): void => {
      buf += d.toString('utf8')
      const nl = buf.indexOf('\n')
      if (nl < 0) return void (buf.length > MAX_REQUEST && done(null))
      try {
        const v = JSON.parse(buf.slice(0, nl)) as unknown
        done(v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null)
      } catch {
        done(null)
      }
    }
    const onEnd = (): void => done(null)
    socket.on('data', onData)
    socket.once('end', onEnd)
  })
}

/** What `ps` and `top` show: the supervisor's drain state and a row per child, newest status. */
export function snapshot(sup: Supervisor, ctx: Pick<Context, 'drainState' | 'stopping'>): ControlSnapshot {
  const now = Date.now()
  const processes = sup.list().map((r): ControlRow => {
    // Only a running incarnation has an uptime, a CPU time and a resident size ('restarting': none runs).
    const over = !RUNS.has(r.status)
    const usage = over ? null : procUsage(r.pid)
    const id = r.requestId ?? r.pid
    return {
      id,
      requestId: r.requestId,
      pid: r.pid,
      status: r.status,
      command: [r.command, ...r.args].join(' '),
      startedAt: r.startedAt.toISOString(),
      uptimeMs: over ? null : now - r.startedAt.getTime(),
      restarts: r.restarts ?? 0,
      cpuMs: usage?.cpuMs ?? null,
      rssBytes: usage?.rssBytes ?? null,
      ready: readiness(r),
      stopping: ctx.stopping.has(String(id)),
    }
  })
  return { drain: ctx.drainState?.() ?? '-', at: new Date(now).toISOString(), processes }
}

/** The statuses whose incarnation runs ('starting': it runs, not ready yet). */
const RUNS = new Set<string>(['running', 'adopted', 'starting'])

/**
 * A record's readiness, when the supervisor keeps one: a `ready` field, or the status 'starting'
 * (running, not ready yet); null otherwise (no readiness condition, or nothing runs).
 */
function readiness(r: ProcessRecord): boolean | null {
  const ready = (r as ProcessRecord & { ready?: unknown }).ready
  if (typeof ready === 'boolean') return ready
  return (r.status as string) === 'starting' ? false : null
}

/**
 * Linux: the leader's CPU time (utime + stime, in clock ticks: USER_HZ is 100 on every Linux ABI) and
 * resident size (VmRSS, in kB whatever the page size: arm64 kernels may use 64 KiB pages).
 */
function procUsage(pid: number): { cpuMs: number; rssBytes: number } | null {
  if (process.platform !== 'linux') return null
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ') // after "pid (comm) ": field 3 is f[0]
    const cpuMs = (Number(f[11]) + Number(f[12])) * 10 // utime, stime (fields 14, 15)
    const rss = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    const rssBytes = rss ? Number(rss[1]) * 1024 : 0 // a zombie or a kernel thread has none
    return Number.isFinite(cpuMs) ? { cpuMs, rssBytes } : null
  } catch {
    return null
  }
}

/** A child by the id the CLI gives (text): a request id as text, then as a number, then a pid. */
function resolve(sup: Supervisor, id: unknown): ProcessRecord & { key: string | number } {
  if (typeof id !== 'string' || id === '') throw typeError('ERR_INVALID_ARG_TYPE', 'give a process id (a request id or a pid)')
  const asText = sup.get(id)
  if (asText) return { ...asText, key: id }
  if (/^\d+$/.test(id)) {
    const r = sup.get(Number(id))
    if (r) return { ...r, key: r.requestId ?? r.pid }
  }
  throw new ReapkitError('ERR_REAPKIT_NOT_SUPERVISED', `no process ${JSON.stringify(id)} in this supervisor`)
}

async function stopOrRestart(sup: Supervisor, op: 'stop' | 'restart', id: unknown, ctx: Context): Promise<unknown> {
  const r = resolve(sup, id)
  const key = String(r.requestId ?? r.pid)
  logEvent(ctx.logger, 'info', `control.${op}`, { pid: r.pid, requestId: r.requestId })
  ctx.stopping.add(key)
  try {
    if (op === 'stop') return await sup.terminate(r.key, { reason: 'reapkit stop' })
    return await sup.restart(r.key)
  } finally {
    ctx.stopping.delete(key)
  }
}

/** `logs`: what is kept of the newest incarnation (both streams), then, with `follow`, what follows. */
async function logs(sup: Supervisor, socket: Socket, request: Record<string, unknown>, send: (v: unknown) => boolean): Promise<void> {
  const r = resolve(sup, request.id)
  const wire = (p: OutputPage): unknown => ({ page: { ...p, data: p.data.toString('base64') } })
  for (const stream of ['stdout', 'stderr'] as const) {
    let offset = 0
    for (;;) {
      const page = sup.output(r.key, { stream, offset, maxBytes: 256 * 1024 })
      if (!page || (page.data.length === 0 && page.skipped === 0)) break
      send(wire(page))
      offset = page.nextOffset
    }
  }
  if (request.follow !== true) return void socket.end(line({ ok: true }))
  const ac = new AbortController()
  socket.once('close', () => ac.abort())
  socket.on('error', () => ac.abort())
  for await (const page of sup.followOutput(r.key, { signal: ac.signal })) {
    // A slow reader: the rings bound what it misses meanwhile; one that reads nothing for a while is dropped.
    if (!send(wire(page)) && !(await drained(socket, FOLLOWER_STALL_MS))) return void socket.destroy()
  }
  socket.end(line({ ok: true }))
}

/** Whether `socket` drained its write buffer within `ms` (false: it closed, or stalled that long). */
function drained(socket: Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean): void => {
      clearTimeout(timer)
      socket.off('drain', onDrain).off('close', onClose)
      resolve(ok)
    }
    const onDrain = (): void => done(true)
    const onClose = (): void => done(false)
    const timer = setTimeout(() => done(false), ms)
    socket.once('drain', onDrain).once('close', onClose)
  })
}
