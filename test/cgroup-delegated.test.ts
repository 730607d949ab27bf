// A cgroup delegated to an unprivileged user by ownership (how systemd delegates user@UID.service
// to its user): a process of that user in it may contain its children, and its stop ends their
// escapees, with no privilege. Built here by hand: a cgroup chowned to nobody, as systemd does it.
import { spawn as nodeSpawn } from 'node:child_process'
import { chownSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { cgroupRoot, noCgroup, removeCgroups } from './cgroup-lib'
import { DIST, exitOf } from './helpers'

const NOBODY = 65534
const made = new Set<string>()
afterEach(async () => {
  await removeCgroups(made)
  made.clear()
})

describe.skipIf(noCgroup !== null || process.geteuid?.() !== 0)('a cgroup delegated by ownership', () => {
  it('lets its unprivileged owner contain a child and end its setsid escapee', async () => {
    const delegated = join(cgroupRoot, `reapkit-test-delegated-${process.pid}`)
    mkdirSync(delegated)
    made.add(delegated)
    // systemd's delegation: the directory and the files a delegate writes belong to the user.
    for (const f of ['', 'cgroup.procs', 'cgroup.threads', 'cgroup.subtree_control']) chownSync(join(delegated, f), NOBODY, NOBODY)
    const script = `process.stdin.once('data', async () => {
  const r = require(${JSON.stringify(DIST)})
  const cap = r.capabilities().cgroup
  const c = r.spawn('sh', ['-c', 'setsid sh -c "echo \\\\$\\\\$ > /dev/null; exec sleep 300" & exec sleep 300'], { cgroup: true, stdio: 'ignore' })
  const cg = r.spawnedInfo(c).cgroup
  const fs = require('fs')
  const deadline = Date.now() + 20000
  // (the library removes the cgroup once its child is gone and it is empty: none left then, not an uncaught ENOENT)
  const members = () => { try { return fs.readFileSync(cg + '/cgroup.procs', 'utf8').trim().split('\\n').length } catch (e) { if (e.code === 'ENOENT') return 0; throw e } }
  while (members() < 2 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 10))
  const result = await r.killProcessGracefully(c, { graceMs: 5000 })
  console.log(JSON.stringify({ uid: process.getuid(), cap, cg, cgroup: result.cgroup, survivors: result.survivors }))
  process.exit(0)
})`
    const host = nodeSpawn(process.execPath, ['-e', script], { uid: NOBODY, gid: NOBODY, stdio: ['pipe', 'pipe', 'inherit'] })
    let out = ''
    host.stdout!.on('data', (d: Buffer) => (out += String(d)))
    // Into the delegated cgroup (as systemd starts the user's manager there), then let it go on.
    writeFileSync(join(delegated, 'cgroup.procs'), String(host.pid))
    host.stdin!.end('go\n')
    await exitOf(host, 40_000)
    const r = JSON.parse(out) as { uid: number; cap: { available: boolean; path?: string }; cg: string; cgroup: { members: number; gone: boolean; removed: boolean }; survivors: number[] }
    expect(r.uid).toBe(NOBODY)
    expect(r.cap).toEqual({ available: true, path: delegated })
    expect(r.cg.startsWith(`${delegated}/reapkit-`)).toBe(true)
    expect(r.cgroup).toMatchObject({ members: 2, gone: true, removed: true })
    expect(r.survivors).toEqual([])
  })
})
