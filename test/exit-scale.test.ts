// Exit delivery at scale: one kernel registration per watched process (however many watches), exits
// batched into one call per wake-up, and none lost, duplicated or reordered on the way. The watched
// processes are tiny static C programs (bench/fixtures/exit-floor.c `spawn N`): thousands of
// forked Node or sh processes stall on small VMs (FACTS.md, "Scale").
import { readdirSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openProcess, watchExit } from '../lib/index'
import { exitWatcherStats } from '../lib/mechanisms/handle'
import { buildExitFloor, DIST, isGone, openFds, spawnGroup, trackGroup, waitFor } from './helpers'

const linux = process.platform === 'linux'
let bin = ''
let removeBin = (): void => {}

beforeAll(() => {
  if (!linux) return
  ;({ bin, remove: removeBin } = buildExitFloor('exit-scale'))
})
afterAll(() => removeBin())

/** N pause processes in a new group (tracked for cleanup); `killAll()` SIGKILLs each of them. */
async function pauseSet(n: number): Promise<{ pids: number[]; killAll(): void }> {
  const spawner = spawnGroup(bin, ['spawn', String(n)], { stdio: ['pipe', 'pipe', 'inherit'] })
  spawner.stdin!.on('error', () => {})
  let out = ''
  await new Promise<void>((resolve, reject) => {
    spawner.stdout!.setEncoding('utf8')
    spawner.stdout!.on('data', (d: string) => {
      out += d
      if (out.includes('\n')) resolve()
    })
    spawner.once('exit', () => reject(new Error('the spawner ended early')))
  })
  const pids = out.trim().split(/\s+/).map(Number)
  trackGroup(-pids.pop()!)
  return { pids, killAll: () => spawner.stdin!.write('k') }
}

describe.runIf(linux)('exit delivery at scale', () => {
  it('1,500 exits at once: every watch settles exactly once, with its own pid, none lost', async () => {
    const set = await pauseSet(1500)
    const settled = new Map<number, number>()
    const promises = set.pids.map((pid) =>
      watchExit(pid).then((info) => {
        settled.set(pid, (settled.get(pid) ?? 0) + 1)
        return info
      }),
    )
    set.killAll()
    const infos = await Promise.all(promises)
    expect(infos.map((i) => i.pid)).toEqual(set.pids)
    expect(settled.size).toBe(1500)
    expect([...settled.values()].every((count) => count === 1)).toBe(true)
    expect(exitWatcherStats().watches).toBe(0)
    expect(exitWatcherStats().registrations).toBe(0)
  }, 60_000)

  it('exits spaced apart settle in the order they happened', async () => {
    const set = await pauseSet(20)
    const order: number[] = []
    const promises = set.pids.map((pid) => watchExit(pid).then(() => order.push(pid)))
    const killOrder = [...set.pids].reverse()
    for (const pid of killOrder) {
      process.kill(pid, 'SIGKILL')
      await new Promise((r) => setTimeout(r, 30))
    }
    await Promise.all(promises)
    expect(order).toEqual(killOrder)
  }, 30_000)

  it('many watches of one process share one registration and one descriptor, and all settle', async () => {
    const set = await pauseSet(1)
    const pid = set.pids[0]!
    const before = exitWatcherStats()
    const fds = openFds()
    const promises = Array.from({ length: 500 }, () => watchExit(pid))
    expect(exitWatcherStats().registrations - before.registrations).toBe(1)
    expect(exitWatcherStats().watches - before.watches).toBe(500)
    expect(openFds() - fds).toBe(1)
    set.killAll()
    const infos = await Promise.all(promises)
    expect(infos.every((i) => i.pid === pid)).toBe(true)
    expect(exitWatcherStats().registrations).toBe(before.registrations)
  }, 30_000)

  it('closing or aborting some watches of a process leaves the others working', async () => {
    const set = await pauseSet(1)
    const pid = set.pids[0]!
    const h1 = openProcess(pid)
    const h2 = openProcess(pid)
    const e1 = h1.exited
    const e2 = h2.exited
    const aborter = new AbortController()
    const aborted = watchExit(pid, { signal: aborter.signal })
    const kept = watchExit(pid)
    const viaHandle = watchExit(h2)
    expect(exitWatcherStats().registrations).toBe(1) // the two handles and the bare pid: one process
    h1.close()
    aborter.abort()
    await expect(e1).rejects.toMatchObject({ code: 'ERR_REAPKIT_HANDLE_CLOSED' })
    await expect(aborted).rejects.toMatchObject({ code: 'ABORT_ERR' })
    expect(exitWatcherStats().watches).toBe(2) // h2.exited (shared by watchExit(h2)) and `kept`
    set.killAll()
    await expect(e2).resolves.toMatchObject({ pid })
    await expect(kept).resolves.toMatchObject({ pid })
    await expect(viaHandle).resolves.toMatchObject({ pid })
    h2.close()
    expect(exitWatcherStats().registrations).toBe(0)
  }, 30_000)

  it('a handle closed while its exit is in flight: no crash, its sibling watches still settle', async () => {
    const set = await pauseSet(200)
    const handles = set.pids.map((pid) => openProcess(pid))
    const exited = handles.map((h) => h.exited)
    const others = set.pids.map((pid) => watchExit(pid))
    // Kill and wait for every death without yielding to the event loop: the exits are then queued
    // in the watcher thread or its hand-off, not yet delivered, when the handles close.
    for (const pid of set.pids) process.kill(pid, 'SIGKILL')
    const deadline = Date.now() + 10_000
    while (!set.pids.every((pid) => isGone(pid)) && Date.now() < deadline) {
      // busy wait, bounded
    }
    for (const h of handles) h.close()
    const results = await Promise.allSettled(exited)
    for (const r of results) {
      // Either outcome is right (the exit won, or the close did); nothing else may happen.
      if (r.status === 'rejected') expect((r.reason as { code?: string }).code).toBe('ERR_REAPKIT_HANDLE_CLOSED')
    }
    const infos = await Promise.all(others)
    expect(infos.map((i) => i.pid)).toEqual(set.pids)
    expect(exitWatcherStats().registrations).toBe(0)
  }, 30_000)

  it("a bare pid that is one of this process's threads is refused as this process", async () => {
    const tid = readdirSync('/proc/self/task').map(Number).find((t) => t !== process.pid)!
    await expect(watchExit(tid)).rejects.toMatchObject({ code: 'ERR_REAPKIT_SELF' })
    await expect(watchExit(process.pid)).rejects.toMatchObject({ code: 'ERR_REAPKIT_SELF' })
  })

  it('20,000 watches on 200 processes fit under a 1,000-descriptor limit (one registration per process)', async () => {
    const set = await pauseSet(200)
    const script = `
      const r = require(${JSON.stringify(DIST)})
      const fs = require('fs')
      const pids = JSON.parse(process.argv[1])
      const fds0 = fs.readdirSync('/proc/self/fd').length
      const promises = []
      let errors = 0
      for (const pid of pids) for (let i = 0; i < 100; i++) promises.push(r.watchExit(pid).catch((e) => { errors++; return e.code }))
      const fds = fs.readdirSync('/proc/self/fd').length - fds0
      console.log(JSON.stringify({ watches: promises.length, fds }))
      process.stdin.once('data', async () => {
        const infos = await Promise.all(promises)
        console.log(JSON.stringify({ settled: infos.filter((i) => i && i.pid).length, errors }))
        process.exit(0)
      })
    `
    const child = spawnGroup('prlimit', ['--nofile=1000:1000', process.execPath, '-e', script, JSON.stringify(set.pids)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    })
    const lines: string[] = []
    let buf = ''
    child.stdout!.setEncoding('utf8')
    child.stdout!.on('data', (d: string) => {
      buf += d
      let i
      while ((i = buf.indexOf('\n')) >= 0) {
        lines.push(buf.slice(0, i))
        buf = buf.slice(i + 1)
      }
    })
    await waitFor(() => lines.length >= 1, 30_000, 'the watches to be registered')
    const registered = JSON.parse(lines[0]!)
    expect(registered.watches).toBe(20_000)
    expect(registered.fds).toBeLessThanOrEqual(210) // one per process (plus the watcher's own few)
    set.killAll()
    child.stdin!.write('go\n')
    await waitFor(() => lines.length >= 2, 30_000, 'every watch to settle')
    expect(JSON.parse(lines[1]!)).toEqual({ settled: 20_000, errors: 0 })
  }, 90_000)
})
