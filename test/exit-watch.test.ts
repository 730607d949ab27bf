import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { capabilities, openProcess, watchExit } from '../lib/index'
import { exitWatcherStats } from '../lib/mechanisms/handle'
import { canUnshare, exitOf, isGone, jsonLines, openFds, spawnChild, spawnFixture, spawnGroup, waitFor } from './helpers'

const linux = process.platform === 'linux'

/** Starts `sh` that runs `sleep` in the background and prints its pid: a process that is not our child. */
async function grandchild(keepZombie = false): Promise<{ pid: number; shell: number }> {
  // With keepZombie the shell execs into a sleep that never waits, so the dead grandchild stays a zombie.
  const script = keepZombie ? 'sleep 1000 & echo $!; exec sleep 1000' : 'sleep 1000 & echo $!; wait'
  const sh = spawnGroup('sh', ['-c', script])
  const line = await new Promise<string>((resolve, reject) => {
    sh.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()))
    sh.once('exit', () => reject(new Error('sh exited early')))
  })
  // The shell may reap the grandchild itself until it has exec'd into its sleep: wait for that.
  if (keepZombie && linux) {
    await waitFor(() => readFileSync(`/proc/${sh.pid}/comm`, 'utf8').trim() === 'sleep', 5000, 'the shell to exec')
  }
  return { pid: Number(line), shell: sh.pid! }
}

describe('capabilities', () => {
  it('reports the exact mechanisms of this platform', () => {
    const caps = capabilities()
    expect(caps.native).toBe(true)
    if (linux) {
      expect(caps).toMatchObject({ pidfd: true, pdeathsig: true, subreaper: true, kqueue: false, exitWatch: 'pidfd', parentWatch: 'pidfd' })
    }
  })

  // Review: from the second call on, every caller got the one cached `missing` array.
  it('gives each caller its own copy: a change to one is not what the next call returns', () => {
    const before = capabilities().missing.length
    capabilities().missing.push('changed by a caller')
    capabilities().missing.length = 0
    expect(capabilities().missing).toHaveLength(before)
    expect(capabilities().missing).not.toContain('changed by a caller')
  })
})

describe('watchExit', () => {
  it('fires for our own child killed by SIGKILL, with its status', async () => {
    const child = spawnChild('sleep', ['1000'])
    const byPid = watchExit(child.pid!)
    const byChild = watchExit(child)
    const handle = openProcess(child.pid!)
    try {
      child.kill('SIGKILL')
      const [a, b, c] = await Promise.all([byPid, byChild, handle.exited])
      expect(b).toEqual({ pid: child.pid, code: null, signal: 'SIGKILL' })
      expect(a.pid).toBe(child.pid)
      expect(c.pid).toBe(child.pid)
      // Read without reaping from the watcher thread; null only if libuv reaped the child first.
      for (const r of [a, c]) expect([null, 'SIGKILL']).toContain(r.signal)
    } finally {
      handle.close()
    }
  })

  it('reports the exit code of our own child', async () => {
    const child = spawnChild('sh', ['-c', 'sleep 0.2; exit 7'])
    const r = await watchExit(child.pid!, { timeoutMs: 10_000 })
    expect(r.pid).toBe(child.pid)
    expect([null, 7]).toContain(r.code)
    expect((await watchExit(child)).code).toBe(7)
  })

  it('fires for a process that is not our child (a grandchild), by kernel event', async () => {
    const { pid, shell } = await grandchild()
    const stat = execFileSync('ps', ['-o', 'ppid=', '-p', String(pid)]).toString().trim()
    expect(Number(stat)).toBe(shell) // really not ours
    const exited = watchExit(pid, { timeoutMs: 10_000 })
    process.kill(pid, 'SIGKILL')
    await expect(exited).resolves.toEqual({ pid, code: null, signal: null })
  })

  it('fires for a non-child that stays a zombie (exited, never reaped)', async () => {
    const { pid } = await grandchild(true)
    const exited = watchExit(pid, { timeoutMs: 10_000 })
    process.kill(pid, 'SIGKILL')
    await expect(exited).resolves.toMatchObject({ pid })
    await waitFor(() => isGone(pid), 5000, 'zombie state')
    // kill(pid, 0) still "succeeds" on the zombie: a poll on it would never see the exit.
    expect(() => process.kill(pid, 0)).not.toThrow()
  })

  it('resolves at once for a pid that already exited', async () => {
    const child = spawnChild('true', [])
    await exitOf(child)
    await expect(watchExit(child.pid!)).resolves.toEqual({ pid: child.pid, code: null, signal: null })
    await expect(watchExit(child)).resolves.toEqual({ pid: child.pid, code: 0, signal: null })
  })

  it('is bounded: timeoutMs rejects with ETIMEDOUT, an AbortSignal with ABORT_ERR, and both leave no watch', async () => {
    const child = spawnChild('sleep', ['1000'])
    const before = exitWatcherStats().watches
    const t0 = Date.now()
    await expect(watchExit(child.pid!, { timeoutMs: 100 })).rejects.toMatchObject({ name: 'TimeoutError', code: 'ETIMEDOUT' })
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90)
    const ac = new AbortController()
    const p = watchExit(child.pid!, { signal: ac.signal })
    ac.abort(new Error('stop'))
    await expect(p).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' })
    await expect(watchExit(child.pid!, { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'ABORT_ERR' })
    await expect(watchExit(child, { timeoutMs: 50 })).rejects.toMatchObject({ code: 'ETIMEDOUT' })
    expect(child.listenerCount('exit')).toBeLessThanOrEqual(1) // only Node's own; ours were removed
    expect(exitWatcherStats().watches).toBe(before)
  })

  it('rejects targets that are not a pid, ChildProcess or handle, before any syscall', async () => {
    await expect(watchExit('123' as never)).rejects.toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' })
    await expect(watchExit(1)).rejects.toMatchObject({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' })
    await expect(watchExit(process.pid)).rejects.toMatchObject({ name: 'RangeError', code: 'ERR_REAPKIT_SELF' })
    await expect(watchExit(2 ** 31, {})).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' })
    await expect(watchExit(1234, { timeoutMs: -1 })).rejects.toMatchObject({ name: 'RangeError' })
    await expect(watchExit(1234, { signal: {} as AbortSignal })).rejects.toMatchObject({ name: 'TypeError' })
  })

  it('an awaited watchExit keeps the process alive (like timers/promises); ref: false does not', async () => {
    const sleeper = spawnGroup('sleep', ['1000'])
    // unref'd: the script ends at once although the watched process lives on
    const quiet = spawnFixture('watch-ref.cjs', [String(sleeper.pid), 'unref'], { stdio: ['ignore', 'pipe', 'inherit'] })
    expect(await exitOf(quiet, 10_000)).toEqual({ code: 0, signal: null })
    // default: the script stays until the process exits, then reports it
    const held = spawnFixture('watch-ref.cjs', [String(sleeper.pid), 'default'], { stdio: ['ignore', 'pipe', 'inherit'] })
    const out = jsonLines(held.stdout!)
    await out.next((m) => m.event === 'watching')
    await new Promise((r) => setTimeout(r, 300))
    expect(held.exitCode).toBe(null)
    process.kill(sleeper.pid!, 'SIGKILL')
    await out.next((m) => m.event === 'exited')
    expect(await exitOf(held, 10_000)).toEqual({ code: 0, signal: null })
  })
})

describe('openProcess', () => {
  it('gives ESRCH, as a Node-style system error, for a pid that already exited', async () => {
    const child = spawnChild('true', [])
    await exitOf(child)
    let err: any
    try {
      openProcess(child.pid!)
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(Error)
    expect(err).toMatchObject({ code: 'ESRCH', errno: -3, syscall: linux ? 'pidfd_open' : 'kill' })
  })

  it('never signals once its process is gone: zombie, reaped, closed', async () => {
    const { pid } = await grandchild(true)
    const zombie = openProcess(pid)
    process.kill(pid, 'SIGKILL')
    await zombie.exited
    expect(() => zombie.signal('SIGTERM')).toThrow(expect.objectContaining({ code: 'ESRCH' }))
    zombie.close()
    expect(() => zombie.signal('SIGTERM')).toThrow(expect.objectContaining({ code: 'EBADF' }))

    const child = spawnChild('sleep', ['1000'])
    const h = openProcess(child.pid!)
    h.signal('SIGKILL')
    await exitOf(child) // reaped by libuv: the pid is free for reuse now
    expect(() => h.signal('SIGKILL')).toThrow(expect.objectContaining({ code: 'ESRCH' }))
    h.close()
  })

  it('rejects a pending `exited` when closed, without an unhandled rejection', async () => {
    const child = spawnChild('sleep', ['1000'])
    const h = openProcess(child.pid!)
    const exited = h.exited
    h.close()
    await expect(exited).rejects.toMatchObject({ code: 'ERR_REAPKIT_HANDLE_CLOSED' })
    const unawaited = openProcess(child.pid!)
    void unawaited.exited
    unawaited.close() // would crash the test run if it leaked an unhandled rejection
    await new Promise((r) => setTimeout(r, 20))
  })

  it('keeps ref() and the holds of pending watchExit calls apart', async () => {
    const child = spawnChild('sleep', ['1000'])
    const h = openProcess(child.pid!)
    try {
      void h.exited
      expect(exitWatcherStats().reffed).toBe(false) // a passive handle does not hold the loop
      h.ref()
      await expect(watchExit(h, { timeoutMs: 30 })).rejects.toMatchObject({ code: 'ETIMEDOUT' })
      expect(exitWatcherStats().reffed).toBe(true) // the user's ref() survives a finished watchExit
      h.unref()
      const long = watchExit(h, { timeoutMs: 10_000 })
      await expect(watchExit(h, { timeoutMs: 30 })).rejects.toMatchObject({ code: 'ETIMEDOUT' })
      expect(exitWatcherStats().reffed).toBe(true) // the other pending watchExit still holds it
      child.kill('SIGKILL')
      await expect(long).resolves.toMatchObject({ pid: child.pid })
      expect(exitWatcherStats().reffed).toBe(false)
    } finally {
      h.close()
    }
  })

  it('10,000 open/close cycles (with exit watches) leave no file descriptor behind', () => {
    const child = spawnChild('sleep', ['1000'])
    const pid = child.pid!
    for (let i = 0; i < 100; i++) openProcess(pid).close() // warm up lazily created descriptors
    void openProcess(pid).exited.catch(() => {})
    const before = openFds()
    for (let i = 0; i < 10_000; i++) {
      const h = openProcess(pid)
      if (i % 2 === 0) void h.exited // registers a kernel watch, which close() must remove
      h.close()
    }
    expect(openFds()).toBe(before)
    expect(exitWatcherStats().watches).toBeLessThanOrEqual(1)
  })
})

describe.runIf(canUnshare)('pid reuse (in a private PID namespace, as root)', () => {
  it('a handle never signals the process that got its pid after it was reaped', async () => {
    const ns = spawnGroup('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, `${__dirname}/fixtures/pid-reuse.cjs`])
    const out = jsonLines(ns.stdout!)
    const result = await out.next((m) => m.event === 'result' || m.event === 'skip', 30_000, 'the pid-reuse result')
    expect(result.event, JSON.stringify(result)).toBe('result')
    expect(result.reusedPid).toBe(result.firstPid) // the new process really has the old pid
    expect(result.handleSignal).toBe('ESRCH') // the handle refused
    expect(result.killByPidHitsNewProcess).toBe(true) // what a pid-based kill would have done
    expect(result.newProcessAlive).toBe(true) // and the new process was untouched
    expect(await exitOf(ns)).toEqual({ code: 0, signal: null })
  })
})
