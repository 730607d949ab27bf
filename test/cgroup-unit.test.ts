// The cgroup unit's "gone" is the kernel's event: `populated 0` on cgroup.events, seen by inotify,
// with no poll behind it; and a child's cgroup is removed, by that same event, once what the child
// left in it ends after the child itself.
import type { ChildProcess } from 'node:child_process'
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openProcess, type ProcessHandle, spawn, spawnedInfo } from '../lib/index'
import { cgroupPopulated } from '../lib/mechanisms/cgroup/make'
import { CgroupUnit } from '../lib/mechanisms/stop/cgroup-unit'
import { StopJournal } from '../lib/mechanisms/stop/journal'
import { cgroupRoot, noCgroup, removeCgroups } from './cgroup-lib'
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
    // The child exits at once; what it started runs on in its cgroup until the test ends it.
    const child = spawn('sh', ['-c', '(setsid sh -c \'echo $$; exec sleep 300\' &)'], { cgroup: true, stdio: ['ignore', 'pipe', 'inherit'] })
    const cg = spawnedInfo(child)!.cgroup!
    made.add(cg)
    const left = await leftBehind(child)
    expect(cgroupPopulated(cg)).toBe(true)
    expect(existsSync(cg)).toBe(true)
    left.signal('SIGKILL')
    await left.exited
    left.close()
    await waitFor(() => !existsSync(cg), 15_000, 'the cgroup to be removed once empty')
  })

  it('removes the cgroups a member made inside the child\'s too, once all is empty', async () => {
    const script = `cg=$(sed -n 's/^0:://p' /proc/self/cgroup)
mkdir "$ROOT$cg/inner"
(setsid sh -c 'echo $$ > "$0"/cgroup.procs; echo $$; exec sleep 300' "$ROOT$cg/inner" &)`
    const own = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((l) => l.startsWith('0::'))!.slice(3)
    const root = own === '/' ? cgroupRoot : cgroupRoot.slice(0, cgroupRoot.length - own.length)
    const child = spawn('sh', ['-c', script], { cgroup: true, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ROOT: root } })
    const cg = spawnedInfo(child)!.cgroup!
    made.add(cg)
    const left = await leftBehind(child)
    expect(readFileSync(join(cg, 'inner', 'cgroup.procs'), 'latin1').trim()).toBe(String(left.pid))
    left.signal('SIGKILL')
    await left.exited
    left.close()
    await waitFor(() => !existsSync(cg), 15_000, 'the cgroup and the one inside it to be removed once empty')
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

/** The process the child left behind (it printed its pid), pinned, once the child has exited. */
async function leftBehind(child: ChildProcess): Promise<ProcessHandle> {
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += String(d)))
  await exitOf(child)
  await waitFor(() => /^\d+\n/.test(out), 15_000, 'the pid of what the child left behind')
  return openProcess(Number(out.trim()))
}
