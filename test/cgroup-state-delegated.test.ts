// Review of issue 30 item 3/5, 1(ii): with onLeftovers 'adopt', a Supervisor moves its adopted
// child's cgroup members into a fresh cgroup of its own, so that doctor, which judges a cgroup by
// the maker its name names, sees a live maker. Unprivileged, under a subtree delegated to the user
// (how systemd gives cgroups to a user, built here by hand: chowned to nobody): the move is allowed
// within one delegated subtree; from another one (no write access to the common ancestor) it is
// refused, and the old cgroup is kept, logged and recorded, its members untouched.
import { spawn as nodeSpawn } from 'node:child_process'
import { chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cgroup2Mount } from '../lib/mechanisms/cgroup/where'
import { cgroupRoot, cleanupAfterEach, noCgroup } from './cgroup-lib'
import { canUnshare, DIST, exitOf, FIXTURES, isGone, jsonLines } from './helpers'

const NOBODY = 65534
const { made, strays } = cleanupAfterEach()
let dir = ''
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'reapkit-cgroup-adopt-'))
  chownSync(dir, NOBODY, NOBODY)
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

/** A cgroup delegated to nobody, as systemd delegates one to a user. */
function delegated(tag: string): string {
  const path = join(cgroupRoot, `reapkit-test-adopt-${tag}-${process.pid}`)
  mkdirSync(path)
  made.add(path)
  for (const f of ['', 'cgroup.procs', 'cgroup.threads', 'cgroup.subtree_control']) chownSync(join(path, f), NOBODY, NOBODY)
  return path
}

/** Runs `argv` as nobody inside `cgroup` from its first instruction (sh waits for the go, then execs). */
function inCgroup(cgroup: string, argv: string[]): ReturnType<typeof nodeSpawn> {
  const child = nodeSpawn('sh', ['-c', 'read go; exec "$@"', 'sh', ...argv], { uid: NOBODY, gid: NOBODY, stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, REAPKIT_DIST: DIST, KEEP_CHILD: '1' } })
  writeFileSync(join(cgroup, 'cgroup.procs'), String(child.pid))
  child.stdin!.end('go\n')
  return child
}

const SUCCESSOR = `const r = require(process.env.REAPKIT_DIST)
const fs = require('fs')
const lines = []
const logger = { info: (o) => lines.push(o), warn: (o) => lines.push(o), error: (o) => lines.push(o), debug() {} }
const sup = new r.Supervisor({ stateFile: process.argv[1], graceMs: 2000, backstop: false, onLeftovers: 'adopt', logger })
const cgroupOf = (p) => fs.readFileSync('/proc/' + p + '/cgroup', 'utf8').split('\\n').find((l) => l.startsWith('0::')).slice(3)
sup.leftovers.then(async (rep) => {
  const members = JSON.parse(process.argv[2])
  const file = JSON.parse(fs.readFileSync(process.argv[1], 'utf8'))
  console.log(JSON.stringify({ pid: process.pid, adopted: rep.adopted.map((a) => a.pid), ended: rep.cgroups, where: members.map(cgroupOf), recorded: file.processes.map((p) => p.cgroup ?? null), events: lines.map((l) => l.event) }))
  await sup.shutdownAll()
  sup.dispose()
  process.exit(0)
})`

/** A host (nobody, in `cgroup`) with two contained children that outlive it, SIGKILLed. */
async function crashedHost(cgroup: string, file: string): Promise<{ cgroups: string[]; children: number[]; members: number[][] }> {
  const host = inCgroup(cgroup, [process.execPath, join(FIXTURES, 'cgroup-state-host.cjs'), file])
  const ready = (await jsonLines(host.stdout!).next((m) => m.event === 'ready', 30_000, 'the host')) as unknown as { cgroups: string[]; children: number[]; members: number[][] }
  for (const cg of ready.cgroups) made.add(cg)
  for (const pids of ready.members) for (const p of pids) strays.add(p)
  process.kill(host.pid!, 'SIGKILL')
  await exitOf(host)
  return ready
}

async function successor(cgroup: string, file: string, members: number[]): Promise<Record<string, any>> {
  const child = inCgroup(cgroup, [process.execPath, '-e', SUCCESSOR, file, JSON.stringify(members)])
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += String(d)))
  await exitOf(child, 60_000)
  const r = JSON.parse(out.trim().split('\n').at(-1)!)
  // Each member's cgroup, as a path under the mount.
  r.where = (r.where as string[]).map((w) => join(cgroup2Mount()!, w))
  for (const w of r.where as string[]) made.add(w)
  return r
}

describe.skipIf(noCgroup !== null || process.geteuid?.() !== 0)("onLeftovers 'adopt' under a delegated subtree", () => {
  it("moves the adopted child's members (escapees too) into a cgroup named for the successor, and removes the old one", async () => {
    const deleg = delegated('a')
    const file = join(dir, 'state.json')
    const ready = await crashedHost(deleg, file)
    const [server] = ready.cgroups as [string, string]
    const members = ready.members[0]!
    const r = await successor(deleg, file, members)
    expect(r.adopted.sort()).toEqual([...ready.children].sort())
    expect(r.ended).toEqual([])
    const fresh = new Set(r.where as string[])
    expect(fresh.size).toBe(1) // all in one cgroup, the server's new one
    const [now] = [...fresh] as [string]
    expect(basename(now)).toMatch(new RegExp(`^reapkit-.*_${r.pid}_\\d+_0_\\d+$`)) // named for the successor
    expect(now.startsWith(`${deleg}/`)).toBe(true) // made where the successor makes its children's
    expect(r.events).toContain('state.cgroup-moved')
    expect(r.events).not.toContain('state.cgroup-kept')
    expect(() => readFileSync(join(server, 'cgroup.procs'))).toThrow(/ENOENT/) // the old one removed
    expect(r.recorded.map((c: { path: string } | null) => c && basename(c.path)).every((n: string | null) => n !== null && n.includes(`_${r.pid}_`))).toBe(true)
  }, 120_000)

  it('keeps the old cgroup, untouched, where the move is refused (the successor in another delegated subtree), and logs it', async () => {
    const from = delegated('from')
    const to = delegated('to')
    const file = join(dir, 'state.json')
    const ready = await crashedHost(from, file)
    const [server] = ready.cgroups as [string, string]
    const members = ready.members[0]!
    const r = await successor(to, file, members)
    expect(r.adopted.sort()).toEqual([...ready.children].sort())
    expect(r.events).toContain('state.cgroup-kept')
    expect(new Set(r.where)).toEqual(new Set([server])) // every member still in the old cgroup
    expect(r.recorded.map((c: { path: string }) => c.path)).toContain(server) // named for the next incarnation
    // Nothing was killed by the refused move (the successor's shutdownAll stopped only the adopted children).
    for (const p of members.filter((p) => !ready.children.includes(p))) expect(isGone(p), `escapee ${p}`).toBe(false)
  }, 120_000)

  // A member outside the successor's PID namespace is listed there as pid 0, and "0" written to
  // cgroup.procs moves the writer itself: such a cgroup is not moved (kept, logged), and the
  // successor stays where it was.
  it.runIf(canUnshare)('keeps a cgroup with a member outside its PID namespace, and never moves itself', async () => {
    chownSync(dir, 0, 0) // run as root here: the state file's folder is root's
    const file = join(dir, 'state.json')
    const driver = nodeSpawn('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, join(FIXTURES, 'cgroup-adopt-ns.cjs'), file], {
      stdio: ['pipe', 'pipe', 'inherit'],
      env: { ...process.env, REAPKIT_DIST: DIST },
    })
    const lines = jsonLines(driver.stdout!)
    driver.once('exit', () => {}) // an early exit shows as the timeout below, with what was seen
    const ready = (await lines.next((m) => m.event === 'ready', 30_000, 'the host')) as unknown as { cgroups: string[] }
    for (const cg of ready.cgroups) made.add(cg)
    const outsider = nodeSpawn('sleep', ['300'], { stdio: 'ignore' })
    strays.add(outsider.pid!)
    writeFileSync(join(ready.cgroups[0]!, 'cgroup.procs'), String(outsider.pid))
    driver.stdin!.end('go\n')
    const r = (await lines.next((m) => Array.isArray(m.adopted), 30_000, 'the successor')) as unknown as { adopted: number[]; events: string[]; before: string; after: string; recorded: string[] }
    for (const cg of r.recorded) made.add(cg) // the quiet child's, moved into one named for the driver
    await exitOf(driver, 30_000)
    expect(r.adopted).toHaveLength(2)
    expect(r.after).toBe(r.before)
    expect(r.events).toContain('state.cgroup-kept')
    expect(isGone(outsider.pid!)).toBe(false)
    expect(readFileSync(join(ready.cgroups[0]!, 'cgroup.procs'), 'latin1')).toContain(String(outsider.pid))
  }, 120_000)
})
