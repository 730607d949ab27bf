// The cgroup unit's "gone" is the kernel's event: `populated 0` on cgroup.events, seen by inotify,
// with no poll behind it; and a child's cgroup is removed, by that same event, once what the child
// left in it ends after the child itself.
import { closeSync, existsSync, openSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { spawn, spawnedInfo } from '../lib/index'
import { cgroupPopulated } from '../lib/mechanisms/cgroup/make'
import { CgroupUnit } from '../lib/mechanisms/stop/cgroup-unit'
import { StopJournal } from '../lib/mechanisms/stop/journal'
import { noCgroup, removeCgroups } from './cgroup-lib'
import { exitOf, waitFor } from './helpers'

const made = new Set<string>()
afterEach(async () => {
  await removeCgroups(made)
  made.clear()
})

describe.skipIf(noCgroup !== null)('the cgroup unit', () => {
  it('learns the cgroup is empty from an inotify event on cgroup.events', async () => {
    const child = spawn('sleep', ['300'], { cgroup: true })
    const cg = spawnedInfo(child)!.cgroup!
    made.add(cg)
    const unit = new CgroupUnit(cg, child.pid!, new StopJournal(undefined))
    unit.phase(0, false) // signal 0: a probe, the member is left running
    const pending = await unit.sweep()
    expect(pending).toHaveLength(1)
    expect(unit.events).toBe(0)
    // The kernel's event alone: the unit's own wait on it, not the member's exit.
    const empty = (unit as unknown as { empty: Promise<void> }).empty
    child.kill('SIGKILL')
    let timer: NodeJS.Timeout | undefined
    const seen = await Promise.race([empty.then(() => true), new Promise((r) => (timer = setTimeout(r, 10_000, false)))])
    clearTimeout(timer)
    expect(seen).toBe(true)
    expect(unit.events).toBeGreaterThanOrEqual(1)
    expect(unit.seenBy).toBe('event')
    expect(await unit.sweep()).toEqual([])
    unit.close()
    expect(unit.outcome()).toMatchObject({ path: cg, members: 1, gone: true, removed: true, escalated: false })
    expect(existsSync(cg)).toBe(false)
    await exitOf(child)
  })

  it('removes a child\'s cgroup once the process it left behind ends, after the child', async () => {
    // The child exits at once; what it started runs on for a moment in its cgroup, then ends.
    const child = spawn('sh', ['-c', '(setsid sleep 0.5 &)'], { cgroup: true })
    const cg = spawnedInfo(child)!.cgroup!
    made.add(cg)
    await exitOf(child)
    expect(cgroupPopulated(cg)).toBe(true)
    await waitFor(() => !existsSync(cg), 15_000, 'the cgroup to be removed once empty')
  })

  it('never takes an unreadable cgroup.events (out of descriptors) for an empty cgroup: the stop is uncertain', async () => {
    const child = spawn('sleep', ['300'], { cgroup: true, stdio: 'ignore' })
    const cg = spawnedInfo(child)!.cgroup!
    made.add(cg)
    const journal = new StopJournal(undefined)
    const unit = new CgroupUnit(cg, child.pid!, journal)
    unit.phase(0, false) // a probe: the member is left running
    // Every descriptor taken, for the synchronous part of one sweep only (it awaits nothing).
    const fds: number[] = []
    let populated: boolean
    let pending: Promise<Array<Promise<unknown>>>
    try {
      try {
        for (;;) fds.push(openSync('/dev/null', 'r'))
      } catch {
        // EMFILE: all taken
      }
      populated = cgroupPopulated(cg)
      pending = unit.sweep()
    } finally {
      for (const fd of fds) closeSync(fd)
    }
    expect(fds.length).toBeGreaterThan(0)
    expect(populated).toBe(true) // unknown counts as populated
    expect(await pending).toHaveLength(1) // still waiting: the member lives
    expect(unit.outcome().gone).toBe(false)
    expect(journal.uncertain).toBe(true)
    expect((journal.error as NodeJS.ErrnoException).code).toBe('EMFILE')
    unit.close()
    expect(unit.outcome().removed).toBe(false)
    child.kill('SIGKILL')
    await exitOf(child)
  })
})
