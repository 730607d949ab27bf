// A Supervisor's control socket (lib/policies/supervisor/control.ts) and the `reapkit ps | logs |
// restart | stop | top` command line (lib/cli/control.ts), through the real launcher (bin/reapkit)
// and a real Unix socket; `top` also under a real pty (script(1)), its screen read back. Every wait
// bounded; every child, socket and folder removed after each test.
import { spawn as spawnChild } from 'node:child_process'
import { chmodSync, chownSync, closeSync, existsSync, lstatSync, mkdirSync, readdirSync, openSync, readFileSync } from 'node:fs'
import { connect, createServer, type Socket } from 'node:net'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openControlSocket, type ControlSocket, type Supervisor } from '../lib/index'
import { nativeBinding } from '../lib/ground/native'
import { exitOf, ROOT, waitFor } from './helpers'
import { run, screenOf } from './control-lib'
import { cleanupAfterEach, settled } from './supervisor-cleanup'

const linux = process.platform === 'linux'
const root = process.getuid?.() === 0
const NOBODY = 65534
const hasScript = linux && existsSync('/usr/bin/script')
const { supervise, tempDir } = cleanupAfterEach()
const sockets: ControlSocket[] = []
afterEach(async () => {
  for (const s of sockets.splice(0)) await s.close()
})

async function withSocket(sup: Supervisor, options: { drainState?: () => string } = {}): Promise<string> {
  const dir = tempDir('reapkit-ctl-')
  const ctl = await openControlSocket(sup, { path: join(dir, 'control.sock'), ...options })
  sockets.push(ctl)
  return ctl.path
}
const ticker = ['-c', 'i=0; while :; do i=$((i+1)); echo "tick $i"; sleep 0.1; done']

describe.runIf(linux)('control socket: who may use it', () => {
  it('is made 0600 in a folder of our own; a folder others can write is refused', async () => {
    const { sup } = supervise()
    const path = await withSocket(sup)
    const st = lstatSync(path)
    expect(st.isSocket()).toBe(true)
    expect(st.mode & 0o777).toBe(0o600)
    const open = tempDir('reapkit-ctl-open-')
    chmodSync(open, 0o777)
    await expect(openControlSocket(sup, { path: join(open, 'c.sock') })).rejects.toMatchObject({ code: 'ERR_REAPKIT_CONTROL_SOCKET_UNSAFE' })
    expect(existsSync(join(open, 'c.sock'))).toBe(false)
  })

  it("a live supervisor's socket is refused to a second one; a dead one's is replaced", async () => {
    const { sup } = supervise()
    const path = await withSocket(sup)
    await expect(openControlSocket(sup, { path })).rejects.toMatchObject({ code: 'ERR_REAPKIT_CONTROL_SOCKET_IN_USE' })
    // A socket whose listener died without removing it (SIGKILL).
    const dir = tempDir('reapkit-ctl-stale-')
    const stale = join(dir, 'control.sock')
    const holder = spawnChild(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(stale)}, () => console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] })
    await new Promise((r) => holder.stdout!.once('data', r))
    holder.kill('SIGKILL')
    await exitOf(holder)
    expect(lstatSync(stale).isSocket()).toBe(true)
    const ctl = await openControlSocket(sup, { path: stale })
    sockets.push(ctl)
    expect((await run(['ps', '--json', '--socket', stale])).code).toBe(0)
  })

  it.runIf(root)('refuses another user who reaches the socket (SO_PEERCRED), before reading a request', async () => {
    const { sup } = supervise()
    sup.spawn('sleep', ['1000'], { requestId: 'keep' })
    const path = await withSocket(sup)
    // Open the way on purpose: the folder traversable and the socket writable by all. Only the peer check is left.
    chmodSync(join(path, '..'), 0o711)
    chmodSync(path, 0o666)
    const probe = `const s = require('net').connect(${JSON.stringify(path)}); s.on('connect', () => s.write(JSON.stringify({ op: 'stop', id: 'keep' }) + '\\n')); let b = ''; s.on('data', (d) => (b += d)); s.on('close', () => console.log(b.trim())); s.on('error', (e) => console.log('error ' + e.code))`
    const r = await run(['-e', probe], { file: process.execPath, uid: NOBODY, gid: NOBODY })
    expect(r.code).toBe(0)
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, code: 'EACCES' })
    expect(sup.get('keep')?.status, 'nothing was stopped').toBe('running')
  })

  it.runIf(root)("the client refuses a socket another user owns, and sends it nothing", async () => {
    const dir = tempDir('reapkit-ctl-theirs-')
    const path = join(dir, 'control.sock')
    let connections = 0
    const server = createServer((s) => (connections++, s.destroy()))
    await new Promise<void>((r) => server.listen(path, r))
    try {
      chownSync(path, NOBODY, NOBODY)
      const r = await run(['ps', '--socket', path])
      expect(r.code).toBe(1)
      expect(r.stderr).toMatch(/belongs to uid 65534/)
      expect(connections).toBe(0)
    } finally {
      await new Promise((r) => server.close(r))
    }
  })
})

describe.runIf(linux)('control socket: its path and its neighbours', () => {
  it('a path longer than a Unix socket can hold is a RangeError before anything is made (server and client)', async () => {
    const { sup } = supervise()
    const dir = tempDir('reapkit-ctl-long-')
    const deep = join(dir, 'a'.repeat(100))
    mkdirSync(deep, { mode: 0o700 })
    const long = join(deep, 'control.sock')
    // Before: Node cut the path at 107 bytes, the socket was made at the cut name (in `dir`), chmod
    // threw ENOENT, and the server kept answering there (stop included).
    await expect(openControlSocket(sup, { path: long })).rejects.toMatchObject({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' })
    expect(readdirSync(dir)).toEqual(['a'.repeat(100)])
    expect(readdirSync(deep)).toEqual([])
    // Fewer characters than bytes: the bytes count.
    const wide = join(dir, 'é'.repeat(50))
    mkdirSync(wide, { mode: 0o700 })
    expect(join(wide, 'c.sock').length).toBeLessThan(107)
    await expect(openControlSocket(sup, { path: join(wide, 'c.sock') })).rejects.toMatchObject({ name: 'RangeError' })
    expect(readdirSync(wide)).toEqual([])
    const client = await run(['ps', '--socket', long])
    expect(client.code).toBe(1)
    expect(client.stderr).toMatch(/at most 107 bytes/)
  })

  it('a live socket whose backlog is full (EAGAIN) is not taken for a stale one', async () => {
    const { sup } = supervise()
    const dir = tempDir('reapkit-ctl-busy-')
    const path = join(dir, 'control.sock')
    // A live listener whose loop is stuck (it accepts nothing), with a backlog of 1.
    const holder = spawnChild(
      process.execPath,
      ['-e', `require('net').createServer().listen({ path: ${JSON.stringify(path)}, backlog: 1 }, () => { console.log('up'); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000) })`],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    )
    const fill: Socket[] = []
    try {
      await new Promise((r) => holder.stdout!.once('data', r))
      for (let i = 0; i < 16; i++) {
        const c = connect(path)
        fill.push(c)
        const how = await new Promise<string>((r) => (c.once('connect', () => r('connected')), c.once('error', (e: NodeJS.ErrnoException) => r(e.code ?? 'error'))))
        if (how === 'EAGAIN') break
        expect(how).toBe('connected')
      }
      // Before: the probe's EAGAIN read as "nobody listens", and the live socket was replaced.
      await expect(openControlSocket(sup, { path })).rejects.toMatchObject({ code: 'ERR_REAPKIT_CONTROL_SOCKET_IN_USE' })
      expect(lstatSync(path).isSocket()).toBe(true)
    } finally {
      for (const c of fill) c.destroy()
      holder.kill('SIGKILL')
      await exitOf(holder)
    }
  })
})

describe.runIf(linux)('peerCredentials (native/peer_cred.cc)', () => {
  it('names its errors: ENOTSOCK for a file, EBADF for a closed descriptor (ENOTSOCK read "E88" before)', () => {
    const fd = openSync('/proc/self/stat', 'r')
    try {
      expect(() => nativeBinding()!.peerCredentials!(fd)).toThrow(expect.objectContaining({ code: 'ENOTSOCK', syscall: 'getsockopt' }))
    } finally {
      closeSync(fd)
    }
    expect(() => nativeBinding()!.peerCredentials!(fd)).toThrow(expect.objectContaining({ code: 'EBADF' }))
  })
})

describe.runIf(linux)('control socket: the wire', () => {
  it('a client that half-closes after its request (nc -N) still gets the answer to stop', async () => {
    const { sup } = supervise()
    sup.spawn('sleep', ['1000'], { requestId: 'v' })
    const path = await withSocket(sup)
    const answer = await raw(path, `${JSON.stringify({ op: 'stop', id: 'v' })}\n`, true)
    // Before: the server's side ended with the client's, and the answer was lost.
    expect(JSON.parse(answer)).toMatchObject({ ok: true, result: { signal: 'SIGTERM' } })
    expect(sup.get('v')?.status).toBe('terminated')
  })

  it('a request whose op is not its own string gets "unknown request"', async () => {
    const { sup } = supervise()
    const path = await withSocket(sup)
    expect(JSON.parse(await raw(path, '{"__proto__":{"op":"ps"}}\n'))).toEqual({ ok: false, code: 'ERR_INVALID_ARG_VALUE', message: 'unknown request' })
    expect(JSON.parse(await raw(path, '{"op":"nope"}\n'))).toEqual({ ok: false, code: 'ERR_INVALID_ARG_VALUE', message: 'unknown request "nope"' })
  })
})

/** Sends `text` to the socket (then ends its side when `half`), and returns all it answered (within 30 s). */
function raw(path: string, text: string, half = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = connect(path)
    let got = ''
    const timer = setTimeout(() => (c.destroy(), reject(new Error(`no answer within 30 s; got ${JSON.stringify(got)}`))), 30_000)
    c.on('connect', () => (half ? c.end(text) : c.write(text)))
    c.on('data', (d) => (got += d))
    c.on('error', (e) => (clearTimeout(timer), reject(e)))
    c.on('close', () => (clearTimeout(timer), resolve(got)))
  })
}

describe.runIf(linux)('reapkit ps, logs, restart, stop', () => {
  it('ps lists each child with its pid, status, uptime, restarts, CPU, RSS, readiness and the drain state', async () => {
    const { sup } = supervise()
    const child = sup.spawn('sh', ticker, { requestId: 'ticker' })
    sup.spawn('sh', ['-c', 'exit 3'], { requestId: 'done' })
    await settled(sup, 'done', 'exited')
    const path = await withSocket(sup, { drainState: () => 'serving' })
    const json = await run(['ps', '--json', '--socket', path])
    expect(json.code).toBe(0)
    const snap = JSON.parse(json.stdout)
    expect(snap.drain).toBe('serving')
    const row = snap.processes.find((p: { id: string }) => p.id === 'ticker')
    expect(row).toMatchObject({ pid: child.pid, status: 'running', restarts: 0, ready: null, stopping: false })
    expect(row.rssBytes).toBeGreaterThan(0)
    expect(row.cpuMs).toBeGreaterThanOrEqual(0)
    expect(row.uptimeMs).toBeGreaterThanOrEqual(0)
    expect(snap.processes.find((p: { id: string }) => p.id === 'done')).toMatchObject({ status: 'exited', uptimeMs: null, cpuMs: null })
    const text = await run(['ps', '--socket', path])
    expect(text.code).toBe(0)
    const lines = text.stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^2 processes, 1 running; drain: serving; /)
    expect(lines[1]).toMatch(/^ID\s+PID\s+STATUS\s+UPTIME\s+RST\s+CPU\s+RSS\s+READY\s+COMMAND$/)
    expect(lines.find((l) => l.startsWith('ticker'))).toMatch(new RegExp(`^ticker\\s+${child.pid}\\s+running\\s+\\d+s\\s+0\\s+\\d+:\\d\\d\\.\\d\\d\\s+[\\d.]+[KM]\\s+-\\s+sh -c`))
  })

  it('logs prints what is kept (stdout to stdout, stderr to stderr); -f follows until the child ends', async () => {
    const { sup } = supervise()
    const talk = sup.spawn('sh', ['-c', 'echo hello; echo oops >&2; read line; echo "got $line"; sleep 0.3; echo bye'], { requestId: 'talk' })
    const path = await withSocket(sup)
    await waitFor(() => (sup.output('talk')?.total ?? 0) > 0 && (sup.output('talk', { stream: 'stderr' })?.total ?? 0) > 0, 10_000, 'the first lines')
    const once = await run(['logs', 'talk', '--socket', path])
    expect(once).toMatchObject({ code: 0, stdout: 'hello\n', stderr: 'oops\n' })
    const follow = run(['logs', 'talk', '-f', '--socket', path])
    // Once the follower is connected (its dump of what is kept comes first), the child is told to go on.
    await waitFor(() => controlConnections(path) > 0, 10_000, 'the follower to connect')
    talk.stdin!.end('world\n')
    const r = await follow
    expect(r.code).toBe(0)
    expect(r.stdout).toBe('hello\ngot world\nbye\n')
    expect(r.stderr).toBe('oops\n')
  })

  it("ps shows other programs' text with every control character as ?: no escape reaches the terminal, no row is forged", async () => {
    const { sup } = supervise()
    sup.spawn('sleep', ['1000'], { requestId: 'honest' })
    // What a client of the example server controls: the request id and the arguments.
    const forged = 'x\n\x1b]0;pwned-title\x07\x1b[2K\rfake-id   1      running   0s   0  0.00s  1.0M  -  /sbin/init\x9b2J'
    sup.spawn('sh', ['-c', 'sleep 1000', forged], { requestId: 'r\x1b[8m\x7f' })
    const path = await withSocket(sup, { drainState: () => 'ok\x1b[2J\nforged' })
    const r = await run(['ps', '--socket', path])
    expect(r.code).toBe(0)
    // Before: the escapes went out raw, and the newline made a row of its own.
    expect(r.stdout).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/)
    const lines = r.stdout.trimEnd().split('\n')
    expect(lines).toHaveLength(4) // the header, the titles, two children
    expect(lines[0]).toContain('drain: ok?[2J?forged;')
    expect(lines[3]).toMatch(/^r\?\[8m\?/)
    expect(lines[3]).toContain('sh -c sleep 1000 x??]0;pwned-title??[2K?fake-id')
    // An error message carries the id the server was given: shown the same way.
    const refused = await run(['stop', 'n\x9bo', '--socket', path])
    expect(refused.code).toBe(1)
    expect(refused.stderr).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/)
    expect(refused.stderr).toContain('no process "n?o"')
  })

  it('stop ends the child (terminated); restart starts a new incarnation (reason requested); an unknown id is refused', async () => {
    const { sup } = supervise()
    const first = sup.spawn('sh', ticker, { requestId: 'svc' })
    sup.spawn('sleep', ['1000'], { requestId: 'other' })
    const path = await withSocket(sup)
    const restarted = await run(['restart', 'svc', '--json', '--socket', path])
    expect(restarted.code).toBe(0)
    const result = JSON.parse(restarted.stdout)
    expect(result.stop.pid).toBe(first.pid)
    expect(result.record.pid).not.toBe(first.pid)
    const r = sup.get('svc')!
    expect(r).toMatchObject({ status: 'running', restarts: 1, pid: result.record.pid })
    expect(r.incarnations.map((i) => i.reason)).toEqual(['start', 'requested'])
    const stopped = await run(['stop', 'svc', '--socket', path])
    expect(stopped.code).toBe(0)
    expect(stopped.stdout).toMatch(new RegExp(`^stopped svc \\(pid ${result.record.pid}\\): SIGTERM, \\d+ ms\\n$`))
    expect(sup.get('svc')?.status).toBe('terminated')
    expect(sup.get('other')?.status).toBe('running')
    const unknown = await run(['stop', 'nope', '--socket', path])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toMatch(/no process "nope".*ERR_REAPKIT_NOT_SUPERVISED/)
    const again = await run(['restart', 'svc', '--socket', path])
    expect(again.code).toBe(1)
    expect(again.stderr).toMatch(/ERR_REAPKIT_NOT_RUNNING/)
  })
})

/** How many connections the socket at `path` holds now, from /proc/net/unix (the listener excluded). */
function controlConnections(path: string): number {
  return readFileSync('/proc/net/unix', 'utf8').split('\n').filter((l) => l.endsWith(` ${path}`) && / 03 /.test(l)).length
}
