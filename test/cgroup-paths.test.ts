// The other stop paths over a child's own cgroup: the stdio transport's close() and the
// Supervisor's exit backstop (process 'exit', synchronous) end what left the child's group too.
import { spawn as nodeSpawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { StdioClientTransport } from '../lib/mcp/stdio-client'
import { parseCgroupName } from '../lib/mechanisms/cgroup/make'
import { cgroupRoot, cleanupAfterEach, noCgroup } from './cgroup-lib'
import { DIST, exitOf, isGone, waitFor } from './helpers'

/** A server that setsids a helper and double-forks a daemon, prints their pids, then reads stdin. */
const SERVER = `setsid sh -c 'echo helper $$; exec sleep 300' &
(setsid sh -c 'echo daemon $$; exec sleep 300' &)
exec cat > /dev/null`

const { made, strays: escapees } = cleanupAfterEach()

const FREEZER = '/sys/fs/cgroup/freezer'
const freezerV1 = process.geteuid?.() === 0 && existsSync(join(FREEZER, 'cgroup.procs'))

const pidsIn = (out: string): number[] => [...out.matchAll(/(?:helper|daemon) (\d+)/g)].map((m) => Number(m[1]))

describe.skipIf(noCgroup !== null)('other stop paths over the cgroup', () => {
  it('StdioClientTransport.close() with { cgroup: true } ends the setsid helper and the double-forked daemon', async () => {
    const transport = new StdioClientTransport({ command: 'sh', args: ['-c', SERVER], stderr: 'inherit' }, { cgroup: true, closeTimeoutMs: 2000, graceMs: 2000 })
    let out = ''
    // The transport reads JSON-RPC lines: the pids arrive as lines it cannot parse, reported as errors.
    transport.onerror = (err) => (out += `${err.message}\n`)
    const before = ours()
    await transport.start()
    // The server's cgroup: the one of ours that start() made.
    const cg = ours().filter((c) => !before.includes(c))
    expect(cg).toHaveLength(1)
    made.add(cg[0]!)
    await waitFor(() => pidsIn(out).length === 2, 30_000, 'the helper and the daemon to say who they are')
    for (const p of pidsIn(out)) escapees.add(p)
    await transport.close()
    for (const p of pidsIn(out)) expect(isGone(p)).toBe(true)
    expect(existsSync(cg[0]!)).toBe(false)
  })

  it('the Supervisor\'s exit backstop ends the escapees of a child in a cgroup when the host exits', async () => {
    const script = `const r = require(${JSON.stringify(DIST)})
const sup = new r.Supervisor()
const c = r.spawn('sh', ['-c', ${JSON.stringify(SERVER)}], { cgroup: true, stdio: ['pipe', 'pipe', 'inherit'] })
sup.adopt(c)
console.log(r.spawnedInfo(c).cgroup)
let out = ''
c.stdout.on('data', (d) => {
  out += d
  if ((out.match(/(helper|daemon) \\d+/g) || []).length === 2) {
    console.log(out.trim())
    process.exit(0)
  }
})`
    const host = nodeSpawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    escapees.add(host.pid!) // ended by the cleanup if it hangs (then cgroup.kill ends what it left)
    let out = ''
    // Its cgroup first, as soon as it is made: the cleanup needs it even if the host hangs.
    host.stdout!.on('data', (d: Buffer) => {
      out += String(d)
      if (out.includes('\n')) made.add(out.split('\n')[0]!)
    })
    await exitOf(host, 30_000)
    const cg = out.split('\n')[0]!
    const pids = pidsIn(out)
    for (const p of pids) escapees.add(p)
    expect(pids).toHaveLength(2)
    await waitFor(() => pids.every(isGone), 10_000, 'the escapees to be gone after the host exited')
    await waitFor(() => !existsSync(cg), 10_000, 'the cgroup to be removed')
  })

  // Members that cgroup.kill cannot end at once: frozen by the v1 freezer (this machine's hybrid
  // hierarchy has one), they keep their SIGKILL pending, and their cgroups populated, until thawed.
  it.skipIf(!freezerV1)('the exit backstop sends every cgroup.kill first, then waits once for them all (not one bounded wait each)', async () => {
    const N = 20
    const script = `const r = require(${JSON.stringify(DIST)})
const sup = new r.Supervisor()
const kids = []
for (let i = 0; i < ${N}; i++) { const c = r.spawn('sleep', ['300'], { cgroup: true, stdio: 'ignore' }); sup.adopt(c); kids.push(c) }
console.log(JSON.stringify(kids.map((c) => ({ pid: c.pid, cgroup: r.spawnedInfo(c).cgroup }))))
process.stdin.once('data', () => {
  let t0
  process.prependListener('exit', () => { t0 = performance.now() })
  process.on('exit', () => { require('fs').writeSync(1, 'backstop ' + (performance.now() - t0) + '\\n') })
  process.exit(0)
})`
    const host = nodeSpawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] })
    let out = ''
    host.stdout!.on('data', (d: Buffer) => (out += String(d)))
    await waitFor(() => out.includes('\n'), 30_000, 'the host to start its children')
    const kids = JSON.parse(out.split('\n')[0]!) as Array<{ pid: number; cgroup: string }>
    for (const k of kids) {
      made.add(k.cgroup)
      escapees.add(k.pid)
    }
    const freezer = join(FREEZER, `reapkit-test-frozen-${process.pid}`)
    mkdirSync(freezer)
    try {
      for (const k of kids) writeFileSync(join(freezer, 'cgroup.procs'), String(k.pid))
      writeFileSync(join(freezer, 'freezer.state'), 'FROZEN')
      await waitFor(() => readFileSync(join(freezer, 'freezer.state'), 'latin1').trim() === 'FROZEN', 10_000, 'the children to be frozen')
      host.stdin!.end('go\n')
      await exitOf(host, 30_000)
      const ms = Number(/backstop ([\d.]+)/.exec(out)![1])
      // One wait each (at most 100 ms) would take N × 100 ms here: none of them can empty.
      expect(ms).toBeLessThan((N * 100) / 2)
      expect(kids.every((k) => !isGone(k.pid))).toBe(true) // frozen, their SIGKILL pending
    } finally {
      writeFileSync(join(freezer, 'freezer.state'), 'THAWED')
    }
    // Thawed: every one of them had its cgroup.kill.
    await waitFor(() => kids.every((k) => isGone(k.pid)), 10_000, 'the children to die of the pending SIGKILL once thawed')
    rmdirSync(freezer)
  })
})

/** The cgroups this process has made (by their names: cgroup/make.ts). */
function ours(): string[] {
  return readdirSync(cgroupRoot).filter((n) => parseCgroupName(n)?.pid === process.pid).map((n) => join(cgroupRoot, n))
}
