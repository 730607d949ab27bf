// Issue 32 item 7: a shutdownAll of thousands of wedged children within its budget. What the faster
// path changed must keep the guarantees: the kill phase's SIGKILL goes to our child's group by its
// id before any listing, so a member the stop never listed must still be ended and confirmed gone;
// the shared deadlines of one shutdownAll never end a wait before its own deadline.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { killProcessGracefully, spawn, Supervisor } from '../lib/index'
import { SharedDeadlines } from '../lib/mechanisms/stop/deadlines'
import { trackGroup, waitFor } from './helpers'

/** Whether `pid` names a live process (not a zombie). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

// The leader ignores SIGTERM and stdin's end; 0.4 s into the grace (after the graceful phase's one
// listing) it forks a member that ignores SIGTERM too and prints its pid.
const WEDGED_WITH_LATE_MEMBER = 'trap "" TERM; echo ready; sleep 0.4; (trap "" TERM; exec sleep 300) & echo "member $!"; while :; do sleep 1; done'

/** A reapkit child running `script`, its output so far. */
function start(script: string) {
  const child = spawn('sh', ['-c', script], { stdio: ['pipe', 'pipe', 'ignore'] })
  trackGroup(child.pid!) // reapkit's spawn: a group of its own, ended by the cleanup if the test fails
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += String(d)))
  return { child, out: () => out }
}

describe.runIf(process.platform === 'linux')('shutdown at scale: the kill phase by group id', () => {
  it('a member forked after the graceful listing is SIGKILLed with the group and confirmed gone', async () => {
    const { child, out } = start(WEDGED_WITH_LATE_MEMBER)
    await waitFor(() => out().includes('ready'), 30_000, 'the child to start')
    const result = await killProcessGracefully(child, { graceMs: 1500, confirmMs: 10_000 })
    const member = Number(/member (\d+)/.exec(out())?.[1])
    expect(member).toBeGreaterThan(1)
    expect(result.escalated).toBe(true)
    expect(result.survivors).toEqual([])
    expect(result.uncertain).toBe(false)
    // SIGTERM once (the leader, listed then), then SIGKILL (a confirming listing that still finds the
    // dying member sends it one more through its pin): the report's fields as before.
    const sent = result.signalsSent.map((s) => s.signal)
    expect(sent[0]).toBe('SIGTERM')
    expect(sent.slice(1).length).toBeGreaterThanOrEqual(1)
    expect(sent.slice(1).every((s) => s === 'SIGKILL')).toBe(true)
    expect(result.signalsSent[1]!.group).toBeUndefined()
    expect(result.signalsSent[1]!.processes).toBeGreaterThanOrEqual(1)
    await waitFor(() => !alive(member), 10_000, 'the member to be gone')
  })

  it('shutdownAll of wedged children, one leaving a member behind: every member ended, none reported left', async () => {
    const sup = new Supervisor({ closeTimeoutMs: 200, graceMs: 800, backstop: false })
    try {
      const kids = [sup.spawn('sh', ['-c', WEDGED_WITH_LATE_MEMBER], { stdio: ['pipe', 'pipe', 'ignore'] })]
      for (let i = 0; i < 20; i++) kids.push(sup.spawn('sh', ['-c', 'trap "" TERM; echo ready; while :; do sleep 1; done'], { stdio: ['pipe', 'pipe', 'ignore'] }))
      const outs = kids.map((k) => {
        trackGroup(k.pid!)
        let o = ''
        k.stdout!.on('data', (d: Buffer) => (o += String(d)))
        return () => o
      })
      await waitFor(() => outs.every((o) => o().includes('ready')), 30_000, 'the children to start')
      const reports = await sup.shutdownAll()
      const member = Number(/member (\d+)/.exec(outs[0]!())?.[1])
      expect(member).toBeGreaterThan(1)
      expect(reports).toHaveLength(21)
      for (const r of reports) {
        expect(r.capped).toBe(false)
        expect(r.escalated).toBe(true)
        expect(r.survivors).toEqual([])
        expect(r.signalsSent.filter((s) => s.signal === 'SIGTERM')).toHaveLength(1)
        expect(r.signalsSent.filter((s) => s.signal === 'SIGKILL').length).toBeGreaterThanOrEqual(1)
      }
      await waitFor(() => !alive(member) && kids.every((k) => k.exitCode !== null || k.signalCode !== null), 10_000, 'every process to be gone')
    } finally {
      sup.dispose()
    }
  })
})

describe('SharedDeadlines (one timer for the waits of one shutdownAll)', () => {
  const never = new Promise<void>(() => {})

  it('never ends a wait before its deadline; deadlines within the slack end together, at the later one', async () => {
    const d = new SharedDeadlines(200)
    const t0 = performance.now()
    const ended: Array<[string, number]> = []
    const wait = (name: string, ms: number) => d.settlesBy(never, t0 + ms).then((r) => (ended.push([name, performance.now() - t0]), r))
    const results = await Promise.all([wait('a', 50), wait('b', 150), wait('c', 600)])
    expect(results).toEqual([false, false, false])
    const at = Object.fromEntries(ended)
    expect(at.a).toBeGreaterThanOrEqual(150 - 1) // held for b, within a's slack
    expect(at.b).toBeGreaterThanOrEqual(150 - 1)
    expect(at.c).toBeGreaterThanOrEqual(600 - 1) // beyond the slack: a deadline of its own
    expect(ended.map(([n]) => n)).toEqual(['a', 'b', 'c'])
  })

  it('a wait whose promise settles first ends then, true, and leaves no timer behind', async () => {
    const d = new SharedDeadlines(50)
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
    const before = timers()
    let resolve!: () => void
    const p = new Promise<void>((r) => (resolve = r))
    const waiting = d.settlesBy(p, performance.now() + 60_000)
    expect(timers()).toBe(before + 1)
    resolve()
    expect(await waiting).toBe(true)
    expect(timers()).toBe(before)
  })

  it('an abort ends the wait at once, false', async () => {
    const d = new SharedDeadlines(50)
    const ac = new AbortController()
    const waiting = d.settlesBy(never, performance.now() + 60_000, ac.signal)
    setTimeout(() => ac.abort(), 20)
    expect(await waiting).toBe(false)
  })
})
