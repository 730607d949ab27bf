// The keepalive's "stdin end" trigger, seen without reading (native/stdin_watch.cc): a server that
// never reads stdin drains when its host closes it; one that reads still gets every byte first; a
// terminal never fires; worker_threads end cleanly, with or without a live native watch.
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { exitOf, FIXTURES, jsonLines, ROOT, spawnFixture, spawnGroup, waitFor, isGone } from './helpers'

const posix = process.platform !== 'win32'
const linux = process.platform === 'linux'
const canScript = linux && spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0

function server(env: NodeJS.ProcessEnv) {
  const child = spawnFixture('keepalive-stdin.cjs', [], { stdio: ['pipe', 'pipe', 'pipe'], env })
  return { child, out: jsonLines(child.stdout!) }
}

describe.runIf(posix)('createKeepalive: stdin end without reading stdin', () => {
  it.runIf(linux)('a server that never reads stdin drains and exits when its host closes the stdin socket', async () => {
    const { child, out } = server({ READ: 'never' })
    // Node gives its children socketpairs for 'pipe': the end is the peer's shutdown (POLLRDHUP).
    expect(await out.next((m) => m.event === 'ready')).toMatchObject({ kind: 'socket' })
    child.stdin!.end()
    expect(await out.next((m) => m.event === 'shutdown', 10_000, 'the drain')).toMatchObject({ reason: 'stdin-end' })
    expect(await exitOf(child, 10_000)).toEqual({ code: 0, signal: null })
  })

  it('a server that never reads stdin drains and exits when the writer of its stdin pipe closes', async () => {
    // `cat` stands between: the server's stdin is a real pipe, whose writer (cat) exits at our end.
    const child = spawnGroup('sh', ['-c', `cat | exec "${process.execPath}" "${join(FIXTURES, 'keepalive-stdin.cjs')}"`], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { READ: 'never' },
    })
    const out = jsonLines(child.stdout!)
    expect(await out.next((m) => m.event === 'ready')).toMatchObject({ kind: 'pipe' })
    child.stdin!.end()
    expect(await out.next((m) => m.event === 'shutdown', 10_000, 'the drain')).toMatchObject({ reason: 'stdin-end' })
    expect(await exitOf(child, 10_000)).toEqual({ code: 0, signal: null })
  })

  it('bytes left unread are not an end: the server keeps running, a SIGTERM still drains', async () => {
    const { child, out } = server({ READ: 'never' })
    await out.next((m) => m.event === 'ready')
    child.stdin!.end('a request nobody has read yet\n')
    await new Promise((r) => setTimeout(r, 700))
    expect(child.exitCode).toBe(null)
    expect(out.seen.some((m) => m.event === 'shutdown')).toBe(false)
    child.kill('SIGTERM')
    expect(await out.next((m) => m.event === 'shutdown', 10_000, 'the drain')).toMatchObject({ reason: 'SIGTERM' })
    expect(await exitOf(child, 10_000)).toEqual({ code: 0, signal: null })
  })

  for (const order of ['first', 'later'] as const) {
    it(`a server that reads stdin (${order === 'first' ? 'before' : 'after'} the keepalive starts) gets every byte, then drains`, async () => {
      const { child, out } = server({ READ: order, READ_DELAY_MS: '500' })
      await out.next((m) => m.event === 'ready')
      // Reading first: more than a socket holds, so the end comes after the reader took most of it.
      // Reading later: a few bytes, so the host's end comes while they still sit unread.
      const bytes = order === 'first' ? 300_000 : 1000
      child.stdin!.end(Buffer.alloc(bytes, 0x61))
      expect(await out.next((m) => m.event === 'shutdown', 10_000, 'the drain')).toEqual({ event: 'shutdown', reason: 'stdin-end', bytes })
      expect(await exitOf(child, 10_000)).toEqual({ code: 0, signal: null })
    })
  }

  it('the watch does not keep the event loop alive: an idle server exits by itself, stdin open', async () => {
    const child = spawnGroup(process.execPath, ['-e', `require(process.env.REAPKIT_DIST).createKeepalive({})`], { stdio: ['pipe', 'pipe', 'pipe'] })
    expect(await exitOf(child, 10_000)).toEqual({ code: 0, signal: null })
    child.stdin!.destroy()
  })

  it.runIf(canScript)('stdin a terminal (under script): nothing is watched and nothing fires', async () => {
    const cmd = `"${process.execPath}" "${join(FIXTURES, 'keepalive-stdin.cjs')}"`
    const child = spawnGroup('script', ['-qfec', cmd, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'], env: { READ: 'never' } })
    const out = jsonLines(child.stdout!)
    const ready = await out.next((m) => m.event === 'ready')
    expect(ready).toMatchObject({ kind: 'tty' })
    await new Promise((r) => setTimeout(r, 700))
    expect(out.seen.some((m) => m.event === 'shutdown')).toBe(false)
    process.kill(ready.pid, 'SIGTERM') // the server is in script's session: stop it by its own pid
    expect(await out.next((m) => m.event === 'shutdown', 10_000, 'the drain')).toMatchObject({ reason: 'SIGTERM' })
    await waitFor(() => isGone(ready.pid), 10_000, 'the server to exit')
    child.stdin!.end()
    await exitOf(child, 10_000)
  })

  it.runIf(linux)('a worker_thread using the keepalive ends cleanly; the main thread still takes the hang-up', async () => {
    const { child, out } = server({ READ: 'worker' })
    expect(await out.next((m) => m.event === 'ready' && m.thread === 'worker')).toMatchObject({ kind: 'worker' })
    expect(await out.next((m) => m.event === 'shutdown')).toMatchObject({ reason: 'worker-done' })
    expect(await out.next((m) => m.event === 'worker-exit')).toMatchObject({ code: 0 })
    expect(await out.next((m) => m.event === 'ready' && m.thread === 'main')).toMatchObject({ kind: 'socket' })
    child.stdin!.end()
    expect(await out.next((m) => m.event === 'shutdown' && m.reason === 'stdin-end', 10_000, 'the drain')).toBeTruthy()
    expect(await exitOf(child, 10_000)).toEqual({ code: 0, signal: null })
  })

  for (const mode of ['main', 'worker'] as const) {
    it.runIf(linux)(`the hang-up reaches a ${mode === 'main' ? 'process' : 'worker_thread'} that is ending: dropped, no crash (12 rounds)`, async () => {
      for (let i = 0; i < 12; i++) {
        const how = i % 2 === 0 ? 'return' : 'exit'
        const child = spawnGroup(process.execPath, [join(FIXTURES, 'stdin-watch-exit.cjs'), ROOT, mode, how], { stdio: ['pipe', 'pipe', 'pipe'] })
        let out = ''
        child.stdout!.on('data', (d) => (out += d))
        await waitFor(() => out.includes('ready'), 10_000, 'the watch to start')
        child.stdin!.end() // while its event loop is blocked
        expect(await exitOf(child, 10_000), `${how}: ${out}`).toEqual({ code: 0, signal: null })
        if (mode === 'worker') expect(out).toContain('worker-exit 0')
      }
    })
  }

  it('workers that start the native watch and end, or are terminated, with its thread live: no crash', async () => {
    const child = spawnGroup(process.execPath, [join(FIXTURES, 'stdin-watch-workers.cjs'), ROOT], { stdio: ['pipe', 'pipe', 'pipe'] })
    const out = jsonLines(child.stdout!)
    const done = await out.next((m) => m.event === 'done', 50_000, 'the worker rounds')
    expect(done).toMatchObject({ rounds: 60, kinds: ['socket'], busy: 'EBUSY' })
    expect(await exitOf(child, 10_000)).toEqual({ code: 0, signal: null })
    child.stdin!.destroy()
  })
})
