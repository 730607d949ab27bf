// Where a cgroup is ours (lib/mechanisms/cgroup/where.ts), against this machine's real kernel:
// what capabilities().cgroup says must be what the kernel then lets us do, and a process that may
// not write there is told why.
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { capabilities } from '../lib/index'
import { cgroup2Mount, ownCgroup } from '../lib/mechanisms/cgroup/where'
import { DIST, spawnChild, exitOf } from './helpers'

const linux = process.platform === 'linux'
const unshareCgroup = linux && spawnSync('unshare', ['--cgroup', '--mount', 'true'], { stdio: 'ignore', timeout: 10_000 }).status === 0

describe.runIf(linux)('capabilities().cgroup', () => {
  it('finds the v2 mount and our own cgroup as /proc says', () => {
    const mount = cgroup2Mount()
    const info = readFileSync('/proc/self/mountinfo', 'utf8')
    expect(mount === null).toBe(!/ - cgroup2 /.test(info))
    const line = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((l) => l.startsWith('0::'))
    expect(ownCgroup()).toBe(line ? line.slice(3) : null)
  })

  it('says available only where a child cgroup can really be made and joined, and why not otherwise', async () => {
    const cg = capabilities().cgroup
    if (!cg.available) {
      expect(cg.reason).toMatch(/\w/)
      return
    }
    expect(cg.path).toBe(ownCgroup() === '/' ? cgroup2Mount() : join(cgroup2Mount()!, ownCgroup()!))
    // The proof: make a child there, move a process in, and remove it again.
    const dir = join(cg.path!, `reapkit-test-where-${process.pid}`)
    mkdirSync(dir)
    const sleeper = spawnChild('sleep', ['30'])
    try {
      writeFileSync(join(dir, 'cgroup.procs'), String(sleeper.pid))
      expect(readFileSync(join(dir, 'cgroup.procs'), 'utf8').trim()).toBe(String(sleeper.pid))
    } finally {
      sleeper.kill('SIGKILL')
      await exitOf(sleeper)
      rmdirSync(dir)
    }
  })

  it.runIf(process.geteuid?.() === 0)('refuses, with the reason, for a user who does not own our cgroup', () => {
    const cg = capabilities().cgroup
    if (!cg.available) return // nothing to refuse here: covered by the test above
    // The same library as another user (nobody): our cgroup is root's, and not theirs to write.
    const out = execFileSync(process.execPath, ['-e', `process.stdout.write(JSON.stringify(require(${JSON.stringify(DIST)}).capabilities().cgroup))`], { uid: 65534, gid: 65534, encoding: 'utf8' })
    const theirs = JSON.parse(out) as { available: boolean; reason?: string }
    expect(theirs.available).toBe(false)
    // In a cgroup namespace of our own (`unshare -C`, a container), ownership is not the rule: the
    // kernel's permission is, and our cgroup is not theirs to write.
    const ownNamespace = statSync('/proc/self/ns/cgroup').ino !== 0xeffffffb
    expect(theirs.reason).toMatch(ownNamespace ? /is not writable by this process/ : /not owned by uid 65534|not delegated to uid 65534/)
  })

  // A systemd inside a container owns that container's cgroup namespace: its single-writer rule
  // still holds there. Made here with a cgroup namespace of our own and a /run that says systemd.
  it.runIf(process.geteuid?.() === 0 && unshareCgroup)('leaves a cgroup namespace of our own to systemd when systemd runs in it', () => {
    const cap = (systemd: boolean): { available: boolean; reason?: string } => {
      const run = systemd ? 'mount -t tmpfs none /run && mkdir -p /run/systemd/system && ' : ''
      const node = `${process.execPath} -e 'process.stdout.write(JSON.stringify(require(${JSON.stringify(DIST)}).capabilities().cgroup))'`
      return JSON.parse(execFileSync('unshare', ['--cgroup', '--mount', '--propagation', 'private', 'sh', '-c', `${run}exec ${node}`], { encoding: 'utf8' })) as { available: boolean; reason?: string }
    }
    // Without systemd, the namespace is ours (wherever our own cgroup is ours): only /run differs.
    if (capabilities().cgroup.available) expect(cap(false).available).toBe(true)
    const withSystemd = cap(true)
    expect(withSystemd.available).toBe(false)
    expect(withSystemd.reason).toMatch(/systemd manages our cgroup/)
  })

  it('is computed lazily and keeps the rest of capabilities() as it was', () => {
    const caps = capabilities()
    expect(typeof caps.pidfd).toBe('boolean')
    expect(typeof caps.cgroup.available).toBe('boolean')
    // A copy each time: a caller's edit does not stick.
    caps.cgroup.available = !caps.cgroup.available
    expect(capabilities().cgroup.available).toBe(!caps.cgroup.available)
  })
})
