// Edge cases of killProcessGracefully found by review: what a stop that is refused leaves open, and
// what a stop leaves of the caller's own settings on a handle it did not open.
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { killProcessGracefully, openProcess, spawn } from '../lib/index'
import { exitOf, FIXTURES, groupMembers, jsonLines, spawnChild, spawnFixture, spawnGroup, trackGroup, waitFor } from './helpers'

/** A shell group that prints `ready` once set up; its output so far, and its group (cleaned up after the test). */
async function readyGroup(script: string): Promise<{ pgid: number; out: () => string }> {
  const leader = spawnGroup('sh', ['-c', script])
  let out = ''
  leader.stdout!.on('data', (d: Buffer) => (out += String(d)))
  await waitFor(() => out.includes('ready'), 30_000, 'the group to start')
  return { pgid: leader.pid!, out: () => out }
}

describe.runIf(process.platform === 'linux')('killProcessGracefully edges', () => {
  it('closes the pin it opened when it refuses this process\'s own group', async () => {
    // sh leads the fixture's group, so the fixture is a member and the group it stops is its own.
    const host = spawnGroup('sh', ['-c', `"${process.execPath}" "${join(FIXTURES, 'stop-edges.cjs')}" own-group; :`])
    const out = await jsonLines(host.stdout!).next((m) => 'codes' in m || 'error' in m, 30_000, 'the result')
    expect(await exitOf(host, 30_000)).toEqual({ code: 0, signal: null })
    expect(out.error).toBeUndefined()
    expect(out.codes).toEqual(Array(10).fill('ERR_REAPKIT_SELF'))
    expect(out.leaked).toBe(0)
  })

  it('leaves the caller\'s ref() on its own handle in place', async () => {
    // The handle keeps the loop alive until its process exits: the stop (with a signal the process
    // survives) must not unref it on the caller's behalf.
    const host = spawnFixture('stop-edges.cjs', ['ref'])
    const out = await jsonLines(host.stdout!).next((m) => 'exitSeen' in m, 30_000, 'the result')
    expect(await exitOf(host, 30_000)).toEqual({ code: 0, signal: null })
    expect(out).toEqual({ stopped: { survivors: 1 }, exitSeen: true })
  })
  it('two stops of one child at once give it the graceful signal once, not twice', async () => {
    // A second SIGTERM (SIGINT) means "force now" to many programs. Before: each stop sent its own.
    const child = spawn(process.execPath, ['-e', "process.on('SIGTERM', () => process.stdout.write('TERM\\n')); process.stdout.write('ready\\n'); setInterval(() => {}, 1000)"], { stdio: ['ignore', 'pipe', 'ignore'] })
    trackGroup(child.pid!) // reapkit's spawn: a group of its own, ended by the cleanup if the test fails
    let out = ''
    child.stdout!.on('data', (d: Buffer) => (out += String(d)))
    await waitFor(() => out.includes('ready'), 30_000, 'the child to get ready')
    const [a, b] = await Promise.all([killProcessGracefully(child, { graceMs: 1500 }), killProcessGracefully(child, { graceMs: 1500 })])
    expect(a.survivors).toEqual([])
    expect(b.survivors).toEqual([])
    await exitOf(child, 10_000)
    expect(out.match(/TERM/g)).toHaveLength(1)
    expect([...a.signalsSent, ...b.signalsSent].filter((s) => s.signal === 'SIGTERM')).toHaveLength(1)
  })

  it('a group whose leader exits in the grace while a member runs on: what the member forks then is out of reach, and the stop says it is uncertain', async () => {
    // Not reapkit's spawn: the group is provably the target's only while its pinned leader lives.
    // The leader dies of SIGTERM; the member ignores it and, once the leader is gone, forks a
    // `sleep` the stop can no longer list. Before: survivors [] and uncertain false while it ran.
    const script = 'L=$$; (trap "" TERM; while kill -0 $L 2>/dev/null; do sleep 0.05; done; sleep 30 & echo forked; wait) & echo ready; wait'
    const { pgid, out } = await readyGroup(script)
    // The grace is long enough for the member to see the leader gone and fork on a loaded machine.
    const result = await killProcessGracefully(pgid, { graceMs: 4000 })
    // Its 'forked' may still be in the pipe when the stop's result is in: waited for, bounded.
    await waitFor(() => out().includes('forked'), 10_000, 'the member to say it forked')
    expect(result.pgid).toBe(pgid)
    expect(result.uncertain).toBe(true)
    expect((result.error as { code?: string } | null)?.code).toBe('ERR_REAPKIT_GROUP_UNPROVEN')
    expect(groupMembers(pgid).length).toBeGreaterThan(0) // the sleep it forked: the report is true
  })

  it('a group whose member forks once the leader is gone and then exits, all within the grace: the stop still says it is uncertain', async () => {
    // The stop looks again only once every pinned member has exited: by then nothing it pinned runs.
    // Before: survivors [] and uncertain false, the `sleep` the member forked running on in the group.
    const script = 'L=$$; (trap "" TERM; while kill -0 $L 2>/dev/null; do sleep 0.05; done; sleep 30 & echo forked) & echo ready; wait'
    const { pgid, out } = await readyGroup(script)
    // The member exits on its own once it has forked, so the stop does not wait out this grace; it
    // is long only so that a loaded machine still lets the member fork inside it.
    const result = await killProcessGracefully(pgid, { graceMs: 10_000, confirmMs: 1000 })
    await waitFor(() => out().includes('forked'), 10_000, 'the member to say it forked')
    expect(result.survivors).toEqual([])
    expect(result.uncertain).toBe(true)
    expect((result.error as { code?: string } | null)?.code).toBe('ERR_REAPKIT_GROUP_UNPROVEN')
    expect(groupMembers(pgid).length).toBeGreaterThan(0) // the sleep it forked: the report is true
  })

  it('group: true on a process that leads no group reports no group: it was stopped alone', async () => {
    const plain = spawnChild('sleep', ['1000']) // Node's spawn: in our own group, leads none
    const r = await killProcessGracefully(plain, { group: true, graceMs: 5000 })
    expect(r).toMatchObject({ pgid: null, signal: 'SIGTERM', survivors: [], uncertain: false }) // before: pgid was its pid
    expect(r.signalsSent).toMatchObject([{ signal: 'SIGTERM', processes: 1 }])
    expect(r.signalsSent[0]!.group).toBeUndefined()
  })

  it('refuses a closed handle before any signal: its pid may name another process by now', async () => {
    const plain = spawnChild('sleep', ['1000'])
    const handle = openProcess(plain.pid!)
    handle.close()
    // Before: the stop pinned the pid again by number and signalled whatever held it.
    await expect(killProcessGracefully(handle, { graceMs: 1000 })).rejects.toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE' })
    expect(plain.exitCode).toBe(null)
    expect(plain.signalCode).toBe(null)
  })

  it('says an uncertain stop was uncertain in its closing event, at warn', async () => {
    // Out of descriptors: the child is pinned by pid (no pidfd), so the stop cannot see everything.
    const host = spawnFixture('stop-edges.cjs', ['uncertain'])
    const out = await jsonLines(host.stdout!).next((m) => 'closing' in m || 'error' in m, 30_000, 'the result')
    expect(await exitOf(host, 30_000)).toEqual({ code: 0, signal: null })
    expect(out).toMatchObject({ uncertain: true, error: 'EMFILE', survivors: [], signal: 'SIGTERM' })
    expect(out.closing).toMatchObject([{ level: 'warn', event: 'group.gone', uncertain: true }])
  })
})
