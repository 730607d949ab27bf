// Supervisor({ stateFile }): a supervisor started again on the same file after its process was
// SIGKILLed finds the previous incarnation's processes that still run (same pid AND start time),
// and stops them (default) or adopts them. Real processes; every one of them is tracked for cleanup.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type ProcessRecord, Supervisor } from '../lib/index'
import { processRow } from '../lib/mechanisms/proctable'
import { canUnshare, exitOf, FIXTURES, isGone, jsonLines, spawnChild, spawnFixture, spawnGroup, trackGroup, waitFor } from './helpers'

const linux = process.platform === 'linux'
let dir: string
let file: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'reapkit-state-'))
  file = join(dir, 'supervisor.json')
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

/** A host SIGKILLed with 5 children of which 2 exited by themselves: the 3 still running. */
async function crashedHost(): Promise<{ alive: number[]; exited: number[]; groupMember: number }> {
  const host = spawnFixture('state-host.cjs', [file])
  const ready = await jsonLines(host.stdout!).next((m) => m.event === 'ready', 15_000, 'the host')
  for (const pid of ready.alive) trackGroup(pid) // each leads its own group: the cleanup kills them
  expect(ready.recorded.sort()).toEqual([...ready.alive].sort())
  // The `sh -c 'sleep & wait'` child's sleep: a member of its group, not recorded itself.
  let groupMember = 0
  await waitFor(() => {
    const kids = readFileSync(`/proc/${ready.alive[1]}/task/${ready.alive[1]}/children`, 'utf8').trim()
    groupMember = Number(kids.split(' ')[0] || 0)
    return groupMember > 0
  }, 5000, 'the group member')
  process.kill(host.pid!, 'SIGKILL')
  await exitOf(host)
  expect(ready.alive.every((p: number) => !isGone(p))).toBe(true)
  return { alive: ready.alive, exited: ready.exited, groupMember }
}

describe.runIf(linux)('Supervisor stateFile', () => {
  it('a new supervisor on the file stops the 3 leftovers still running (default), their groups with them', async () => {
    const { alive, exited, groupMember } = await crashedHost()
    const sup = new Supervisor({ stateFile: file, graceMs: 2000, backstop: false })
    const report = (await sup.leftovers)!
    expect(report.corrupt).toBe(false)
    expect(report.found.map((f) => f.pid).sort()).toEqual([...alive].sort())
    expect(report.found.map((f) => f.requestId).sort()).toEqual(['a', 'b', 'c'])
    expect(report.dropped).toEqual([]) // the two that exited were never left in the file
    expect(report.stopped).toHaveLength(3)
    for (const pid of [...alive, groupMember]) expect(isGone(pid), `pid ${pid}`).toBe(true)
    expect(exited.length).toBe(2)
    // The file now describes the new incarnation: nothing.
    expect(JSON.parse(readFileSync(file, 'utf8')).processes).toEqual([])
    sup.dispose()
  })

  it('a file whose supervisor still runs is refused (in this process or another), and its children are left alone', async () => {
    const host = spawnFixture('state-host.cjs', [file])
    const ready = await jsonLines(host.stdout!).next((m) => m.event === 'ready', 15_000, 'the host')
    for (const pid of ready.alive) trackGroup(pid)
    try {
      expect(() => new Supervisor({ stateFile: file, backstop: false })).toThrow(expect.objectContaining({ code: 'ERR_REAPKIT_STATE_FILE_IN_USE' }))
      expect(ready.alive.every((p: number) => !isGone(p))).toBe(true)
      expect(JSON.parse(readFileSync(file, 'utf8')).processes.map((p: { pid: number }) => p.pid).sort()).toEqual([...ready.alive].sort())
    } finally {
      process.kill(host.pid!, 'SIGKILL')
      await exitOf(host)
    }
    // Its writer gone, the same file is a crash's leftovers again; and a second supervisor on it
    // in this process is refused while the first holds it.
    const sup = new Supervisor({ stateFile: file, graceMs: 2000, backstop: false })
    try {
      expect((await sup.leftovers)!.found).toHaveLength(3)
      expect(() => new Supervisor({ stateFile: file, backstop: false })).toThrow(expect.objectContaining({ code: 'ERR_REAPKIT_STATE_FILE_IN_USE' }))
    } finally {
      sup.dispose()
    }
    new Supervisor({ stateFile: file, backstop: false }).dispose() // released by dispose()
  })

  it("with onLeftovers: 'adopt', they join the registry as 'adopted', and terminate / shutdownAll stop them by event", async () => {
    const { alive, groupMember } = await crashedHost()
    const sup = new Supervisor({ stateFile: file, onLeftovers: 'adopt', graceMs: 2000, backstop: false })
    try {
      const report = (await sup.leftovers)!
      expect(report.adopted.map((r) => [r.pid, r.status])).toEqual(expect.arrayContaining(alive.map((p) => [p, 'adopted'])))
      expect(sup.list().filter((r) => r.status === 'adopted').map((r) => r.pid).sort()).toEqual([...alive].sort())
      expect(sup.get('a')?.status).toBe('adopted')
      // Still in the file (a crash of this supervisor would find them again).
      expect(JSON.parse(readFileSync(file, 'utf8')).processes.map((p: { pid: number }) => p.pid).sort()).toEqual([...alive].sort())
      const statuses: ProcessRecord[] = []
      sup.on('status', (r: ProcessRecord) => statuses.push(r))
      const result = await sup.terminate('b')
      expect(result.pid).toBe(alive[1])
      expect(isGone(alive[1]!)).toBe(true)
      expect(isGone(groupMember)).toBe(true) // the group it leads went with it
      expect(sup.get('b')?.status).toBe('terminated')
      expect(statuses.map((s) => [s.pid, s.status])).toContainEqual([alive[1], 'terminated'])
      // One exits on its own: its status follows by event.
      process.kill(alive[0]!, 'SIGKILL')
      await waitFor(() => statuses.some((s) => s.pid === alive[0] && s.status === 'exited'), 5000, "the adopted process's exit event")
      await sup.shutdownAll()
      expect(isGone(alive[2]!)).toBe(true)
      await waitFor(() => JSON.parse(readFileSync(file, 'utf8')).processes.length === 0, 5000, 'the file to empty')
    } finally {
      sup.dispose()
    }
  })

  it('drops a record whose pid now names another process (start time differs), never signalling it', async () => {
    const stranger = spawnChild('sleep', ['1000'])
    await waitFor(() => processRow(stranger.pid!) !== null, 2000, 'the stranger')
    const row = processRow(stranger.pid!)!
    writeFileSync(file, JSON.stringify({ version: 1, processes: [{ pid: stranger.pid, start: String(Number(row.start) - 1), pgid: stranger.pid, requestId: 'x', command: 'sleep', args: [] }] }))
    const sup = new Supervisor({ stateFile: file, backstop: false })
    const report = (await sup.leftovers)!
    expect(report.dropped).toEqual([{ pid: stranger.pid, reason: 'recycled' }])
    expect(report.found).toEqual([])
    await new Promise((r) => setTimeout(r, 100))
    expect(stranger.exitCode).toBe(null)
    expect(stranger.signalCode).toBe(null)
    sup.dispose()
    // And with 'adopt': not adopted either.
    const again = new Supervisor({ stateFile: file, onLeftovers: 'adopt', backstop: false })
    expect((await again.leftovers)!.adopted).toEqual([])
    again.dispose()
  })

  it('a torn state file (truncated mid-write) does not crash the new supervisor, which then works', async () => {
    const whole = JSON.stringify({ version: 1, processes: [{ pid: process.pid, start: '1', pgid: null, requestId: null, command: 'x', args: [] }] })
    writeFileSync(file, whole.slice(0, Math.floor(whole.length / 2)))
    const sup = new Supervisor({ stateFile: file, backstop: false })
    const report = (await sup.leftovers)!
    expect(report).toMatchObject({ corrupt: true, found: [], dropped: [], stopped: [] })
    const child = sup.spawn('sleep', ['1000'], { stdio: 'ignore' })
    await waitFor(() => JSON.parse(readFileSync(file, 'utf8')).processes.length === 1, 2000, 'the new record')
    await sup.terminate(child.pid!, { graceMs: 1000 })
    await waitFor(() => JSON.parse(readFileSync(file, 'utf8')).processes.length === 0, 2000, 'the record to go')
    sup.dispose()
  })

  it('refuses bad options before touching the file', () => {
    expect(() => new Supervisor({ stateFile: '' })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
    expect(() => new Supervisor({ stateFile: file, onLeftovers: 'kill' as never })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
  })

  it('a bad output option throws before the file is opened: the leftovers are not touched and the file is not held', async () => {
    const { alive } = await crashedHost()
    // Before: the state file was opened first (its leftovers stopped, the file held by this process), then this threw.
    expect(() => new Supervisor({ stateFile: file, output: { perChildBytes: -1 } })).toThrow(expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }))
    expect(() => new Supervisor({ stateFile: file, output: { totalBytes: 'big' as never } })).toThrow(expect.objectContaining({ name: 'TypeError' }))
    const sup = new Supervisor({ stateFile: file, onLeftovers: 'adopt', backstop: false })
    try {
      expect((await sup.leftovers)!.adopted.map((r) => r.pid).sort()).toEqual([...alive].sort())
      for (const pid of alive) expect(isGone(pid), `leftover ${pid}`).toBe(false)
      await sup.shutdownAll()
    } finally {
      sup.dispose()
    }
  })
})


// Issue 19 item 1: a state file someone else could write, or a record that cannot prove itself,
// must never aim a signal. As root, in a private PID namespace (a mistaken signal reaches nothing
// outside it). The canary is a root-owned sleep named with its real pid and start time.
describe.runIf(linux && canUnshare)('Supervisor stateFile trust (in a private PID namespace, as root)', () => {
  it('refuses files and folders others can write, symlinks and FIFOs; drops records that cannot prove themselves; signals nothing', async () => {
    const ns = spawnGroup('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, join(FIXTURES, 'state-trust.cjs')])
    const out = jsonLines(ns.stdout!)
    const last = await out.next((m) => m.event === 'done' || m.event === 'error', 60_000, 'the last case')
    expect(last.event, JSON.stringify(last)).toBe('done')
    expect(await exitOf(ns)).toEqual({ code: 0, signal: null })
    const cases = Object.fromEntries(out.seen.filter((m) => m.event === 'case').map((m) => [m.name, m]))
    const refused = [
      'planted by another user',
      'world-writable file',
      'symlink to a file someone else wrote',
      'symlink to a root-owned file',
      'a folder others can write',
      'a folder another user owns',
      'a FIFO at the name',
    ]
    for (const name of refused) expect(cases[name]?.code, name).toBe('ERR_REAPKIT_STATE_FILE_UNSAFE')
    for (const name of ['a live process it never started, no token', 'a live process it never started, a made-up token']) {
      expect(cases[name]?.code, name).toBe(null)
      expect(cases[name]?.found, name).toBe(0)
      expect(cases[name]?.dropped?.map((d: { reason: string }) => d.reason), name).toEqual(['unproven'])
    }
    expect(cases['a torn file']).toMatchObject({ code: null, found: 0, corrupt: true })
    expect(Object.keys(cases)).toHaveLength(10)
    for (const c of Object.values(cases) as Array<{ name: string; canaryAlive: boolean }>) expect(c.canaryAlive, c.name).toBe(true)
    // A symlinked folder retargeted after the start: the file stays in the real folder that was checked.
    expect(out.seen.find((m) => m.event === 'ancestor')).toEqual({ event: 'ancestor', inReal: true, inTheirs: [] })
    // The control: a process that carries the record's token is found and stopped.
    const control = out.seen.find((m) => m.event === 'control')
    expect(control).toEqual({ event: 'control', found: 1, stopped: 1, provenAlive: false, canaryAlive: true })
  })
})
