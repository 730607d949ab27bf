// Issue 30 item 5: reapkit/testing's leak guard sees escapees through the cgroup. A contained
// server double-forks a daemon and exits; the daemon is re-parented out of the capturing process's
// tree. A capture without the subreaper flag (a runner that cannot set it) still lists it, by its
// cgroup, and ends it with cgroup.kill; the cgroup is removed after.
import { describe, expect, it } from 'vitest'
import { cleanupAfterEach, noCgroup } from './cgroup-lib'
import { exitOf, isGone, jsonLines, spawnFixture } from './helpers'

const { made, strays } = cleanupAfterEach()

describe.skipIf(noCgroup !== null)('reapkit/testing: escapees seen through the cgroup', () => {
  it('a capture without the subreaper flag lists a double-forked daemon of a contained child, and kills it with its cgroup', async () => {
    const host = spawnFixture('cgroup-leak-guard.cjs')
    const lines = jsonLines(host.stdout!)
    const said = await lines.next((m) => m.event === 'daemon', 30_000, 'the daemon')
    strays.add(said.daemon)
    made.add(said.cgroup)
    const r = await lines.next((m) => m.event === 'result', 30_000, 'the result')
    await exitOf(host)
    // Out of the capturing process's tree: not its child, nor a descendant.
    expect(r.ppid).not.toBe(host.pid)
    expect(r.survivors).toEqual([expect.objectContaining({ pid: said.daemon, command: 'sleep 300', cgroup: said.cgroup })])
    expect(r.error).toMatch(new RegExp(`1 process outlived the test \\(now killed\\):\\n  pid ${said.daemon} \\(ppid \\d+, pgid \\d+, in cgroup ${said.cgroup.replace(/[.]/g, '\\.')}\\)`))
    expect(r.daemonGone).toBe(true)
    expect(r.cgroupExists).toBe(false)
    expect(isGone(said.daemon)).toBe(true)
  })
})
