// Two copies of the library in one process (worker_threads: each loads its own) must never give two
// children the same cgroup, nor let one copy's stop reach the other's child; and a stop never
// touches a cgroup that is no longer the one spawn() made (same path, made anew by someone else).
import { spawn as nodeSpawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { afterEach, describe, expect, it } from 'vitest'
import { closeClient, killProcessGracefully, spawn, spawnedInfo } from '../lib/index'
import { cgroupRoot, cleanupAfterEach, noCgroup } from './cgroup-lib'
import { DIST, exitOf, isGone, waitFor } from './helpers'

const { made, strays } = cleanupAfterEach()

/**
 * A worker that loads its own copy of the library and does what it is told: `spawn <cmd...>`
 * (answers the child's pid and cgroup), `exit` (answers once its child has exited and its cgroup is
 * gone), `close` (closeClient of its child), `kill` (SIGKILL to its child).
 */
const WORKER = `const { parentPort } = require('node:worker_threads')
const r = require(${JSON.stringify(DIST)})
let child
parentPort.on('message', async ([cmd, ...args]) => {
  try {
    if (cmd === 'spawn') {
      child = r.spawn(args[0], args.slice(1), { cgroup: true, stdio: 'ignore' })
      parentPort.postMessage({ pid: child.pid, cgroup: r.spawnedInfo(child).cgroup })
    } else if (cmd === 'exit') {
      const cg = r.spawnedInfo(child).cgroup
      if (child.exitCode === null && child.signalCode === null) await new Promise((res) => child.once('exit', res))
      const deadline = Date.now() + 10000
      while (require('fs').existsSync(cg) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 10))
      parentPort.postMessage({ removed: !require('fs').existsSync(cg) })
    } else if (cmd === 'close') {
      const rep = await r.closeClient(child, { closeTimeoutMs: 200, graceMs: 500 })
      parentPort.postMessage({ phase: rep.phase, cgroup: rep.cgroup })
    } else if (cmd === 'kill') {
      child.kill('SIGKILL')
      parentPort.postMessage({})
    }
  } catch (e) {
    parentPort.postMessage({ error: e.code + ' ' + e.message })
  }
})`

class Copy {
  readonly worker = new Worker(WORKER, { eval: true })
  ask<T = Record<string, unknown>>(...msg: string[]): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the worker did not answer ${msg[0]}`)), 20_000)
      this.worker.once('message', (m: T & { error?: string }) => {
        clearTimeout(timer)
        if (m.error) reject(new Error(m.error))
        else resolve(m)
      })
      this.worker.postMessage(msg)
    })
  }
}

const copies: Copy[] = []
afterEach(async () => {
  await Promise.all(copies.splice(0).map((c) => c.worker.terminate()))
})

describe.skipIf(noCgroup !== null)('cgroups of two copies of the library in one process', () => {
  it('gives their children cgroups of their own (never the same name)', async () => {
    const a = new Copy()
    const b = new Copy()
    copies.push(a, b)
    const ra = await a.ask<{ pid: number; cgroup: string }>('spawn', 'sleep', '300')
    made.add(ra.cgroup)
    strays.add(ra.pid)
    const rb = await b.ask<{ pid: number; cgroup: string }>('spawn', 'sleep', '300')
    made.add(rb.cgroup)
    strays.add(rb.pid)
    expect(rb.cgroup).not.toBe(ra.cgroup)
    expect(readFileSync(join(ra.cgroup, 'cgroup.procs'), 'latin1').trim()).toBe(String(ra.pid))
    expect(readFileSync(join(rb.cgroup, 'cgroup.procs'), 'latin1').trim()).toBe(String(rb.pid))
  })

  it('a copy\'s closeClient of its exited child never ends the other copy\'s child', async () => {
    const a = new Copy()
    const b = new Copy()
    copies.push(a, b)
    const ra = await a.ask<{ pid: number; cgroup: string }>('spawn', 'true')
    made.add(ra.cgroup)
    expect(await a.ask('exit')).toEqual({ removed: true }) // A's child exited, its cgroup removed
    const rb = await b.ask<{ pid: number; cgroup: string }>('spawn', 'sleep', '300')
    made.add(rb.cgroup)
    strays.add(rb.pid)
    const closed = await a.ask<{ phase: string; cgroup?: unknown }>('close')
    expect(closed.phase).toBe('already-exited')
    expect(isGone(rb.pid)).toBe(false)
    await b.ask('kill')
  })
})

describe.skipIf(noCgroup !== null)('a cgroup name already taken', () => {
  it('is skipped for the next one (EEXIST), never joined', async () => {
    const first = spawn('true', [], { cgroup: true, stdio: 'ignore' })
    const cg = spawnedInfo(first)!.cgroup!
    made.add(cg)
    await exitOf(first)
    // The next name this thread would give, taken before it does.
    const seq = (globalThis as unknown as Record<symbol, { n: number }>)[Symbol.for('reapkit.cgroup.seq')]!.n
    const taken = cg.replace(/_\d+$/, `_${seq + 1}`)
    mkdirSync(taken)
    made.add(taken)
    const next = spawn('sleep', ['300'], { cgroup: true, stdio: 'ignore' })
    const cg2 = spawnedInfo(next)!.cgroup!
    made.add(cg2)
    strays.add(next.pid!)
    expect(cg2).not.toBe(taken)
    expect(cg2).toBe(cg.replace(/_\d+$/, `_${seq + 2}`))
    expect(readFileSync(join(taken, 'cgroup.procs'), 'latin1')).toBe('')
    next.kill('SIGKILL')
    await exitOf(next)
  })
})

describe.skipIf(noCgroup !== null || process.geteuid?.() !== 0)('a cgroup that is no longer the one spawn() made', () => {
  it('is neither listed, signalled nor removed by a stop, though it has the same path', async () => {
    const child = spawn('sleep', ['300'], { cgroup: true, stdio: 'ignore' })
    const cg = spawnedInfo(child)!.cgroup!
    made.add(cg)
    strays.add(child.pid!)
    // Our child moved out, its cgroup removed behind reapkit's back and made anew by someone else,
    // with a process of theirs in it.
    const aside = join(cgroupRoot, `reapkit-test-aside-${process.pid}`)
    mkdirSync(aside)
    made.add(aside)
    writeFileSync(join(aside, 'cgroup.procs'), String(child.pid))
    await waitFor(() => readFileSync(join(cg, 'cgroup.procs'), 'latin1').trim() === '', 10_000, 'the cgroup to be empty')
    rmdirSync(cg)
    mkdirSync(cg)
    const stranger = nodeSpawn('sleep', ['300'], { stdio: 'ignore' })
    strays.add(stranger.pid!)
    writeFileSync(join(cg, 'cgroup.procs'), String(stranger.pid))
    const r = await killProcessGracefully(child, { graceMs: 2000 })
    await exitOf(child)
    expect(isGone(stranger.pid!)).toBe(false)
    expect(existsSync(cg)).toBe(true)
    expect(r.signalsSent.some((s) => s.cgroup === true)).toBe(false)
    expect(r.cgroup).toMatchObject({ path: cg, members: 0, gone: true })
    // And the child's info says its cgroup is gone: no later stop looks there again.
    expect(spawnedInfo(child)!.cgroupRemoved).toBe(true)
    stranger.kill('SIGKILL')
    await exitOf(stranger)
  })
})
