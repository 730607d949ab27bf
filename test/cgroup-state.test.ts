// Issue 30 item 3: a Supervisor with a stateFile ends its previous incarnation's cgroups at start.
// The host (a Supervisor whose children are spawned with { cgroup: true }) is SIGKILLed; its
// children's escapees (out of every process group) are left in their cgroups. The next supervisor
// on the file finds those cgroups in its file's records (path and id), ends them with cgroup.kill
// and removes them; with onLeftovers 'adopt', it moves the members of an adopted process's cgroup
// into a fresh one of its own (so doctor, judging the name, sees a live maker) and ends the rest.
// Review of issue 30 item 3/5: a start ends its own file's cgroups only, never those of another
// Supervisor the dead process ran, whose children a live successor may have adopted.
import { spawn as nodeSpawn } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { findLeakedCgroups, Supervisor } from '../lib/index'
import { ownNamePrefix } from '../lib/mechanisms/cgroup/name'
import { cgroup2Mount } from '../lib/mechanisms/cgroup/where'
import { cleanupAfterEach, noCgroup } from './cgroup-lib'
import { DIST, exitOf, isGone, jsonLines, spawnFixture, waitFor } from './helpers'

const { made, strays } = cleanupAfterEach()
let dir = ''
let file = ''
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'reapkit-cgroup-state-'))
  file = join(dir, 'supervisor.json')
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

interface Ready {
  cgroups: string[]
  children: number[]
  members: number[][]
}

/** Starts the host, waits for it to be ready, SIGKILLs it. */
async function crashedHost(keepChildren: boolean): Promise<Ready> {
  const host = spawnFixture('cgroup-state-host.cjs', [file], { env: { ...process.env, REAPKIT_DIST: DIST, KEEP_CHILD: keepChildren ? '1' : '0' } })
  const ready = (await jsonLines(host.stdout!).next((m) => m.event === 'ready', 30_000, 'the host')) as unknown as Ready
  for (const cg of ready.cgroups) made.add(cg)
  for (const pids of ready.members) for (const p of pids) strays.add(p)
  process.kill(host.pid!, 'SIGKILL')
  await exitOf(host)
  return ready
}

/** The v2 cgroup directory `pid` is in. */
function cgroupOf(pid: number): string {
  const line = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n').find((l) => l.startsWith('0::'))!
  return join(cgroup2Mount()!, line.slice(3))
}

describe.skipIf(noCgroup !== null)('Supervisor stateFile: the previous incarnation\'s cgroups', () => {
  it('are ended at start: the escapees that ignore SIGTERM are gone, and both cgroups (one already empty) removed; one of its names owned by another uid is left alone', async () => {
    const ready = await crashedHost(false)
    const [server, quiet] = ready.cgroups as [string, string]
    const escapees = ready.members[0]!.filter((p) => p !== ready.children[0])
    expect(escapees).toHaveLength(2)
    for (const p of escapees) expect(isGone(p)).toBe(false) // left running by the host's death
    // Named as the predecessor names its cgroups, but another uid's: that user's word, never acted
    // on. (Made only as root: a chown and a move of a process into it need root.)
    const root = process.geteuid?.() === 0
    const forged = server.replace(/_\d+$/, '_999')
    const sleeper = root ? nodeSpawn('sleep', ['300'], { stdio: 'ignore' }) : null
    if (sleeper) {
      mkdirSync(forged)
      made.add(forged)
      chownSync(forged, 65534, 65534)
      strays.add(sleeper.pid!)
      writeFileSync(join(forged, 'cgroup.procs'), String(sleeper.pid))
    }
    const sup = new Supervisor({ stateFile: file, graceMs: 2000, backstop: false })
    try {
      const report = (await sup.leftovers)!
      expect(report.cgroups.map((c) => c.path)).not.toContain(forged)
      if (sleeper) expect(isGone(sleeper.pid!)).toBe(false)
      const byPath = new Map(report.cgroups.map((c) => [c.path, c]))
      expect(byPath.get(server)).toEqual({ path: server, members: 2, killed: true, state: 'gone', removed: true })
      // The quiet child died with its host (the death signal): its cgroup is an empty leftover, removed.
      expect(byPath.get(quiet)).toMatchObject({ path: quiet, killed: false, state: 'gone', removed: true })
      for (const p of escapees) expect(isGone(p), `escapee ${p}`).toBe(true)
      expect(existsSync(server)).toBe(false)
      expect(existsSync(quiet)).toBe(false)
    } finally {
      sup.dispose()
    }
  })

  it('ends a cgroup whose child had exited before the crash (its escapees held it): the file kept it after the record', async () => {
    const host = spawnFixture('cgroup-state-host.cjs', [file], { env: { ...process.env, REAPKIT_DIST: DIST, KEEP_CHILD: '0' } })
    const ready = (await jsonLines(host.stdout!).next((m) => m.event === 'ready', 30_000, 'the host')) as unknown as Ready
    for (const cg of ready.cgroups) made.add(cg)
    for (const pids of ready.members) for (const p of pids) strays.add(p)
    const [server] = ready.cgroups as [string, string]
    const escapees = ready.members[0]!.filter((p) => p !== ready.children[0])
    // The server exits; its escapees hold its cgroup, which the file goes on naming.
    process.kill(ready.children[0]!, 'SIGKILL')
    const named = (): boolean => {
      try {
        const data = JSON.parse(readFileSync(file, 'utf8'))
        return data.processes.length === 1 && (data.cgroups ?? []).some((c: { path: string }) => c.path === server)
      } catch {
        return false
      }
    }
    await waitFor(named, 10_000, 'the file to keep the exited child\'s cgroup')
    process.kill(host.pid!, 'SIGKILL')
    await exitOf(host)
    const sup = new Supervisor({ stateFile: file, graceMs: 2000, backstop: false })
    try {
      const report = (await sup.leftovers)!
      expect(report.cgroups.find((c) => c.path === server)).toEqual({ path: server, members: 2, killed: true, state: 'gone', removed: true })
      for (const p of escapees) expect(isGone(p), `escapee ${p}`).toBe(true)
      expect(JSON.parse(readFileSync(file, 'utf8')).cgroups).toBeUndefined() // removed: no longer named
    } finally {
      sup.dispose()
    }
  })

  it("with onLeftovers 'adopt': the adopted child's cgroup is moved into one of this process's (doctor sees a live maker), the other ended", async () => {
    const ready = await crashedHost(true)
    const [server, quiet] = ready.cgroups as [string, string]
    // The quiet child exits: its cgroup is left empty, nothing in it to adopt.
    process.kill(ready.children[1]!, 'SIGKILL')
    await waitFor(() => isGone(ready.children[1]!), 10_000, 'the quiet child to exit')
    const sup = new Supervisor({ stateFile: file, graceMs: 2000, backstop: false, onLeftovers: 'adopt' })
    try {
      const report = (await sup.leftovers)!
      expect(report.adopted.map((a) => a.pid)).toEqual([ready.children[0]])
      expect(report.cgroups).toEqual([{ path: quiet, members: 0, killed: false, state: 'gone', removed: true }])
      // Its members, escapees too, now in a cgroup named for this process; the old one removed.
      const moved = cgroupOf(ready.children[0]!)
      made.add(moved)
      expect(moved.split('/').pop()!.startsWith(`${ownNamePrefix()}_`)).toBe(true)
      for (const p of ready.members[0]!) expect(cgroupOf(p), `pid ${p}`).toBe(moved)
      expect(existsSync(server)).toBe(false)
      for (const p of ready.members[0]!) expect(isGone(p), `pid ${p}`).toBe(false)
      // The file names the moved cgroup for the next incarnation.
      expect(JSON.parse(readFileSync(file, 'utf8')).processes[0].cgroup.path).toBe(moved)
      // doctor judges the cgroup that holds the adopted child by its maker: alive, not a leftover.
      const leaked = (await findLeakedCgroups()).leaked
      for (const c of leaked) expect(c.members.map((m) => m.pid)).not.toContain(ready.children[0])
    } finally {
      await sup.shutdownAll()
      sup.dispose()
    }
  })

  it("ends only its own file's cgroups: a dead process's other Supervisor's child, adopted by a live successor, runs on", async () => {
    const file2 = join(dir, 'other.json')
    const host = spawnFixture('cgroup-two-supervisors-host.cjs', [file, file2], { env: { ...process.env, REAPKIT_DIST: DIST } })
    const ready = (await jsonLines(host.stdout!).next((m) => m.event === 'ready', 30_000, 'the host')) as unknown as { cgroups: string[]; children: number[] }
    for (const cg of ready.cgroups) made.add(cg)
    for (const p of ready.children) strays.add(p)
    process.kill(host.pid!, 'SIGKILL')
    await exitOf(host)
    const [mine, theirs] = ready.cgroups as [string, string]
    const adopter = new Supervisor({ stateFile: file2, graceMs: 2000, backstop: false, onLeftovers: 'adopt' })
    const sup = new Supervisor({ stateFile: file, graceMs: 2000, backstop: false })
    try {
      const adopted = (await adopter.leftovers)!
      expect(adopted.adopted.map((a) => a.pid)).toEqual([ready.children[1]])
      made.add(cgroupOf(ready.children[1]!))
      const report = (await sup.leftovers)!
      expect(report.cgroups.map((c) => c.path)).toEqual([mine])
      expect(report.cgroups.map((c) => c.path)).not.toContain(theirs)
      expect(isGone(ready.children[0]!)).toBe(true)
      expect(isGone(ready.children[1]!), "the other file's adopted child").toBe(false)
    } finally {
      await adopter.shutdownAll()
      adopter.dispose()
      sup.dispose()
    }
  })
})
