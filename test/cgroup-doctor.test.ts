// Issue 30 item 3: leftovers found exactly. A cgroup spawn({ cgroup: true }) made, whose host was
// SIGKILLed, is listed by `reapkit doctor` with its members and ended by `--stop` (cgroup.kill);
// never one whose maker is alive, one that is not reapkit's, nor (doctor run by root) one another
// user owns, whatever its name says. The stop runs inside a PID namespace of its own (unshare
// --pid --fork --mount-proc): a mistaken signal as root could end the machine.
import { spawn as nodeSpawn, spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync } from 'node:fs'
import { basename, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { cgroupOwnerVerdict } from '../lib/mechanisms/cgroup/judge'
import { listReapkitCgroups } from '../lib/mechanisms/cgroup/list'
import { ownNamePrefix, parseCgroupName } from '../lib/mechanisms/cgroup/name'
import { findLeakedCgroups, spawn, spawnedInfo, stopLeakedCgroup } from '../lib/index'
import { cgroupRoot, cleanupAfterEach, noCgroup } from './cgroup-lib'
import { canUnshare, DIST, exitOf, FIXTURES, isGone, waitFor } from './helpers'

const canSetpriv = process.geteuid?.() === 0 && spawnSync('setpriv', ['--version'], { stdio: 'ignore' }).status === 0

const { made, strays } = cleanupAfterEach()

/** Runs the namespace driver (fixtures/cgroup-doctor-ns.cjs); its JSON line. */
async function inNamespace(extra: string): Promise<Record<string, any>> {
  const child = nodeSpawn('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, join(FIXTURES, 'cgroup-doctor-ns.cjs'), extra], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, REAPKIT_DIST: DIST },
  })
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += String(d)))
  const end = await exitOf(child, 120_000)
  const last = out.trim().split('\n').at(-1)!
  if (!last.startsWith('{')) throw new Error(`the namespace driver said nothing (exit ${end.code ?? end.signal}); stdout: ${JSON.stringify(out)}`)
  const r = JSON.parse(last)
  for (const p of r.made) made.add(p) // removed by the driver; by the cleanup if it could not
  if (r.error) throw new Error(r.error)
  return r
}

/** Starts fixtures/cgroup-host.cjs here; what it said. */
async function host(): Promise<{ child: ReturnType<typeof nodeSpawn>; cgroup: string; pid: number; members: number[] }> {
  const child = nodeSpawn(process.execPath, [join(FIXTURES, 'cgroup-host.cjs')], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, REAPKIT_DIST: DIST } })
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += String(d)))
  await waitFor(() => out.includes('\n'), 30_000, 'the host to say its cgroup')
  const said = JSON.parse(out.split('\n')[0]!)
  made.add(said.cgroup)
  for (const p of said.members) strays.add(p)
  return { child, ...said }
}

describe.skipIf(noCgroup !== null)('doctor: leftover cgroups', () => {
  it("judges a cgroup's maker by its name: this process alive, a pid that never ran gone, another PID namespace not judged", () => {
    const mine = parseCgroupName(`${ownNamePrefix()}_0_1`)!
    expect(cgroupOwnerVerdict(mine).status).toBe('alive')
    expect(cgroupOwnerVerdict({ ...mine, pid: 4_194_303 })).toEqual({ status: 'gone', why: 'its maker, pid 4194303, is gone' })
    expect(cgroupOwnerVerdict({ ...mine, startTime: '1' }).why).toMatch(/now names another process/)
    expect(cgroupOwnerVerdict({ ...mine, pidNamespace: '1' }).status).toBe('unknown')
    expect(cgroupOwnerVerdict({ ...mine, hostname: 'elsewhere' }).status).toBe('unknown')
    expect(cgroupOwnerVerdict({ ...mine, bootId: 'f'.repeat(32) }).status).toBe('unknown')
  })

  it('lists the cgroup of a SIGKILLed host with its escapees (and not a live host\'s), without signalling anything', async () => {
    const dead = await host()
    const living = await host()
    try {
      dead.child.kill('SIGKILL')
      await exitOf(dead.child)
      const report = await findLeakedCgroups()
      expect(report.checked).toBe(true)
      const entry = report.leaked.find((c) => c.path === dead.cgroup)
      expect(entry, 'the dead host\'s cgroup').toBeDefined()
      expect(entry!.why).toMatch(new RegExp(`its maker, pid ${dead.child.pid}, is gone`))
      // The server died with its host (the death signal); its two escapees are the members.
      await waitFor(() => isGone(dead.pid), 10_000, 'the server to die with its host')
      const listed = (await findLeakedCgroups()).leaked.find((c) => c.path === dead.cgroup)!
      expect(listed.members.map((m) => m.pid).sort()).toEqual(dead.members.filter((p) => !isGone(p)).sort())
      expect(listed.members.length).toBe(2)
      expect(listed.members.every((m) => m.command === 'sleep 300')).toBe(true)
      expect([...report.leaked, ...report.foreign].some((c) => c.path === living.cgroup)).toBe(false)
      // Listing signalled nothing.
      for (const p of listed.members) expect(isGone(p.pid)).toBe(false)
      // A copy of an entry (JSON) is never acted on: its identity is not in it.
      await expect(stopLeakedCgroup(JSON.parse(JSON.stringify(listed)))).rejects.toThrow(/not a copy/)
    } finally {
      living.child.kill('SIGKILL')
      await exitOf(living.child)
    }
  })

  it('lists a leftover inside a leftover (a nested reapkit\'s) once, with the outer one; a walk cut at its bound says so', async () => {
    const dead = await host()
    dead.child.kill('SIGKILL')
    await exitOf(dead.child)
    // A cgroup a member made inside (named, as a nested reapkit names it, for a maker that is gone).
    const inner = join(dead.cgroup, `${ownNamePrefix().replace(/_\d+_[0-9-]+$/, '')}_4194303_1_0_1`)
    mkdirSync(inner)
    expect(parseCgroupName(basename(inner))).not.toBeNull()
    const report = await findLeakedCgroups()
    expect(report.leaked.map((c) => c.path)).toContain(dead.cgroup)
    expect([...report.leaked, ...report.foreign].map((c) => c.path)).not.toContain(inner)
    expect(listReapkitCgroups({ maxDirs: 1 }).truncated).toBe(true)
  })

  it.runIf(canUnshare && process.geteuid?.() === 0)(
    'doctor --stop (in a PID namespace of its own, as root) ends the dead host\'s cgroup and nothing else: not a live host\'s, not another name, not another uid\'s',
    async () => {
      // A live cgroup of ours, out here: from the namespace, its maker is in another PID namespace
      // (listed apart, never stopped), and its member is a process that namespace cannot see.
      const outside = spawn('sleep', ['300'], { cgroup: true, stdio: 'ignore' })
      made.add(spawnedInfo(outside)!.cgroup!)
      strays.add(outside.pid!)
      const r = await inNamespace('')
      const foreign = r.listed.foreign.find((c: { path: string }) => c.path === spawnedInfo(outside)!.cgroup)
      expect(foreign).toMatchObject({ members: [], outside: 1 })
      expect(foreign.why).toMatch(/is in another PID namespace/)
      expect(isGone(outside.pid!)).toBe(false)
      const paths = (list: Array<{ path: string }>) => list.map((c) => c.path)
      expect(paths(r.listed.leaked)).toContain(r.dead.cgroup)
      const dead = r.listed.leaked.find((c: { path: string }) => c.path === r.dead.cgroup)
      expect(dead.members.map((m: { pid: number }) => m.pid).sort()).toEqual([...r.dead.escapees].sort())
      for (const other of [r.alive.cgroup, r.plain.path, r.other.path]) {
        expect(paths(r.listed.leaked)).not.toContain(other)
        expect(paths(r.listed.otherUsers)).not.toContain(other) // another user's: not even listed without --all-users
      }
      const stopped = r.stopOutput.stoppedCgroups
      expect(stopped).toContainEqual({ path: r.dead.cgroup, members: 2, killed: true, state: 'gone', removed: true })
      expect(paths(stopped)).not.toContain(r.alive.cgroup)
      expect(r.after).toEqual({
        deadEscapeesAlive: [],
        deadCgroupExists: false,
        aliveMembersAlive: r.alive.members,
        aliveCgroupExists: true,
        plainAlive: true,
        otherAlive: true,
      })
    },
    180_000,
  )

  it.runIf(canUnshare && process.geteuid?.() === 0)('doctor --all-users (root) lists another uid\'s leftover apart, by its word, and --stop leaves it running', async () => {
    const r = await inNamespace('--all-users')
    const other = r.listed.otherUsers.find((c: { path: string }) => c.path === r.other.path)
    expect(other).toMatchObject({ uid: 65534, members: [{ pid: r.other.pid }] })
    expect(other.why).toMatch(/uid 65534's cgroup's name \(that user's word\): not stopped/)
    expect(r.stopOutput.stoppedCgroups.map((c: { path: string }) => c.path)).not.toContain(r.other.path)
    expect(r.after.otherAlive).toBe(true)
    expect(r.after.deadEscapeesAlive).toEqual([])
  }, 180_000)

  // Review of issue 30 item 3/5, 2: a stat's EACCES threw and ended the whole walk, so one user's
  // 0744 directory with a reapkit-named cgroup in it blinded every other user's doctor.
  it.runIf(canSetpriv)("another user's unreadable directories (0744: listable, not searchable; 0700) are skipped and counted, not thrown", () => {
    const top = join(cgroupRoot, `reapkit-test-unreadable-${process.pid}`)
    const name = `reapkit-evil_${'0'.repeat(32)}_1_1_1_0_1`
    mkdirSync(top)
    made.add(top)
    for (const d of ['x', 'y']) {
      mkdirSync(join(top, d, name), { recursive: true })
      made.add(join(top, d))
    }
    chmodSync(join(top, 'x'), 0o744) // its names listed, their stat refused (EACCES)
    chmodSync(join(top, 'y'), 0o700) // its listing refused (EACCES)
    const probe = `require(${JSON.stringify(DIST)}).findLeakedCgroups().then((r) => console.log(JSON.stringify({ ok: r.checked, unreadable: r.unreadable })), (e) => console.log(JSON.stringify({ error: e.message })))`
    const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', probe], { cwd: '/', encoding: 'utf8', timeout: 30_000 })
    expect(r.stderr).toBe('')
    expect(JSON.parse(r.stdout.trim())).toEqual({ ok: true, unreadable: 2 })
  })
})
