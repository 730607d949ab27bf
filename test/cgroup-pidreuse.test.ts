// A member forked during a stop may take the pid of a member that has already exited (forced here
// in a PID namespace of its own, through ns_last_pid): it is a new member, pinned and given the
// graceful signal like any other, never skipped as "known".
import { spawn as nodeSpawn } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import { noCgroup, removeCgroups } from './cgroup-lib'
import { canUnshare, DIST, exitOf } from './helpers'

const made = new Set<string>()
afterEach(async () => {
  await removeCgroups(made)
  made.clear()
})

/**
 * In the child's cgroup, a setsid member X with a child A; on SIGTERM, X waits for A to exit, steers
 * the next pid onto A's, and starts B (so B has A's pid), then exits. B dies on SIGTERM.
 */
const X = `trap 'wait $A; echo $((A-1)) > /proc/sys/kernel/ns_last_pid; sleep 300 & echo B $! >&2; exit 0' TERM
sleep 300 & A=$!; echo A $A >&2; wait; wait`

const HOST = `const r = require(${JSON.stringify(DIST)})
const c = r.spawn('sh', ['-c', ${JSON.stringify(`setsid sh -c '${X.replace(/'/g, `'\\''`)}' & exec sleep 300`)}], { cgroup: true, stdio: ['ignore', 'ignore', 'pipe'] })
console.log(r.spawnedInfo(c).cgroup)
let err = ''
c.stderr.on('data', (d) => { err += d; if (/A \\d+/.test(err) && !c.started) { c.started = true; setTimeout(go, 200) } })
async function go() {
  const res = await r.killProcessGracefully(c, { graceMs: 3000 })
  // Every member is gone: the stderr pipe ends once its last holder has (B's line read by then).
  await new Promise((res) => { c.stderr.once('end', res); setTimeout(res, 5000) })
  console.log(JSON.stringify({ err, cgroup: res.cgroup, escalated: res.escalated, sent: res.signalsSent }))
  process.exit(0)
}`

describe.skipIf(noCgroup !== null || !canUnshare)('a member that takes the pid of a gone member', () => {
  it('is pinned and given the graceful signal: nothing is left for the kill', async () => {
    // PID 1 of the namespace: when it exits, the kernel ends whatever is left in it.
    const host = nodeSpawn('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, '-e', HOST], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    host.stdout!.on('data', (d: Buffer) => (out += String(d)))
    await exitOf(host, 40_000)
    const [cg, json] = out.trim().split('\n')
    made.add(cg!)
    const r = JSON.parse(json!) as { err: string; cgroup: { members: number; escalated: boolean; gone: boolean }; escalated: boolean; sent: Array<{ signal: string; processes: number; cgroup?: boolean }> }
    const a = /A (\d+)/.exec(r.err)![1]
    expect(r.err).toContain(`B ${a}`) // B did take A's pid
    // B pinned as a fourth member, and given SIGTERM like the three before it. (Whether it then dies
    // of it is the shell's: a SIGTERM that reaches B between its fork and its exec runs the
    // inherited trap and is lost. So escalation is not asserted.)
    expect(r.cgroup).toMatchObject({ members: 4, gone: true })
    expect(r.sent.filter((s) => s.signal === 'SIGTERM').reduce((n, s) => n + s.processes, 0)).toBe(4)
  })
})
