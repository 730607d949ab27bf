// The native-facing subset, run where a prebuild will run rather than where it was built: under
// Node 20 from the npm registry in a Debian 11 root (glibc 2.31) for linux-x64, and under Node 20's
// arm64 binary in an arm64 Debian 11 root through qemu-user for linux-arm64. The package is staged
// in the root as the tarball installs it (scripts/reach/verify.sh), and each check runs
// test/reach/fixtures/native.cjs there in a process of its own; this file, on the host, judges
// what it printed and what the kernel shows of its processes (/proc is the host's: same pids).
//
// The subset proves the load and each kernel call the addon and its helpers make: pidfd_open,
// pidfd_send_signal, the pidfd in epoll, waitid(P_PIDFD), setpgid and PR_SET_PDEATHSIG in the
// exec helper, PR_SET_PDEATHSIG delivered, waitid(WSTOPPED), PR_SET_CHILD_SUBREAPER, the native
// supervisor, and the addon's teardown in a worker. Run by `vitest --config vitest.reach.config.mts`
// from scripts/reach/verify.sh (a root) and verify-here.sh (this system as it is: an Alpine
// container, an arm64 runner), which set REAPKIT_REACH_ROOT (the root, or / for none),
// REAPKIT_REACH_ARCH (x64 | arm64), REAPKIT_REACH_LIBC (glibc | musl), REAPKIT_REACH_GLIBC (the
// root's glibc, empty on musl), REAPKIT_REACH_APP and REAPKIT_REACH_NODE (the staged package's
// folder and the Node binary, as seen from the root) and, under emulation, REAPKIT_REACH_EMULATOR.
import { spawn } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { exitOf, isGone, jsonLines, trackGroup, waitFor } from '../helpers'

const env = process.env
const root = env.REAPKIT_REACH_ROOT ?? ''
const arch = env.REAPKIT_REACH_ARCH ?? ''
const libc = env.REAPKIT_REACH_LIBC || 'glibc'
const app = env.REAPKIT_REACH_APP || '/opt/reach'
const node = env.REAPKIT_REACH_NODE || '/opt/node/bin/node'
const emulator = env.REAPKIT_REACH_EMULATOR ?? ''
// Emulated processes start in about 1.5 s (Node under qemu-user): bounds scale with it.
const slow = emulator ? 4 : 1

/**
 * Runs a command in the root, in a private mount namespace with its own /proc and the host's /dev
 * (gone with the namespace, whatever happens); with root /, directly.
 */
function inRoot(argv: string[]) {
  const script = 'mount -t proc proc "$R/proc" && mount --rbind /dev "$R/dev" && exec chroot "$R" "$@"'
  const [cmd, args] = root === '/' ? [argv[0]!, argv.slice(1)] : ['unshare', ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', script, 'sh', ...argv]]
  const child = spawn(cmd, args, {
    detached: true, // its own group, which the after-test cleanup kills (test/setup.ts)
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { R: root, PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root', LANG: 'C' },
  })
  trackGroup(child.pid!)
  let stdout = ''
  let stderr = ''
  const out = jsonLines(child.stdout!)
  child.stdout!.on('data', (d: string) => (stdout += d))
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  return { child, out, stdout: () => stdout, stderr: () => stderr }
}

const fixture = (mode: string) => inRoot([node, `${app}/native.cjs`, mode])

/** Runs a fixture mode to its end and returns its JSON line. */
async function run(mode: string): Promise<any> {
  const { child, out, stderr } = fixture(mode)
  const exit = await exitOf(child, 60_000 * slow)
  expect(exit, stderr()).toEqual({ code: 0, signal: null })
  expect(out.seen.length, stderr()).toBe(1)
  return out.seen[0]
}

const PREBUILD = `${app}/node_modules/reapkit/prebuilds/linux-${arch}`
const ADDON = libc === 'musl' ? 'reapkit.musl.node' : 'reapkit.node'

describe.runIf(root && arch)(`the linux-${arch} ${libc} prebuild in ${root}${emulator ? ` under ${emulator}` : ''}`, () => {
  it(`loads: the tarball's ${ADDON} for this arch and libc, with every native capability`, async () => {
    const seen = await run('load')
    expect(seen).toMatchObject({ arch, file: `${PREBUILD}/${ADDON}`, supervisor: `${PREBUILD}/reapkit-supervise` })
    expect(seen.node).toMatch(/^v20\./)
    expect(seen.glibc).toBe(env.REAPKIT_REACH_GLIBC || null)
    expect(seen.caps).toMatchObject({ native: true, pidfd: true, pdeathsig: true, exitWatch: 'pidfd', parentWatch: 'pidfd', execHelper: true, supervisor: true })
  })

  it('pidfd_open, pidfd_send_signal, the pidfd in epoll, waitid(P_PIDFD) for the status, ESRCH once gone', async () => {
    const seen = await run('pidfd')
    expect(seen.info).toEqual({ pid: seen.pid, code: null, signal: 'SIGKILL' })
    expect(seen.esrch).toBe('ESRCH')
  })

  it('spawn() through the prebuilt exec helper: its own group, the death signal armed; killProcessGracefully() empties the group', async () => {
    const seen = await run('spawn')
    expect(seen).toMatchObject({ pgid: seen.pid, deathSignal: 'SIGKILL', members: [seen.pid] })
    expect(seen.killed).toMatchObject({ escalated: false, survivors: [] })
    expect(isGone(seen.pid)).toBe(true)
  })

  it('PR_SET_PDEATHSIG is delivered: the spawned sleep dies with the SIGKILLed Node that spawned it', async () => {
    const { child, out } = fixture('orphan')
    const seen = await out.next((m) => m.child, 30_000 * slow, 'the spawn')
    expect(seen.deathSignal).toBe('SIGKILL')
    expect(isGone(seen.child)).toBe(false)
    child.kill('SIGKILL') // the chain exec'd into the fixture's Node: this is its pid
    expect(seen.pid).toBe(child.pid)
    await waitFor(() => isGone(seen.child), 10_000 * slow, 'the sleep to die of its parent-death signal')
  })

  it('watchParent(): the death signal armed in-process, delivered and handled, onExit once', async () => {
    const { out } = fixture('intermediate')
    const info = await out.next((m) => m.event === 'intermediate', 30_000 * slow, 'the intermediate')
    const ready = await out.next((m) => m.event === 'ready', 30_000 * slow, 'the watcher to arm')
    expect(ready).toMatchObject({ parentPid: info.pid, mechanism: 'pdeathsig', armed: 'SIGUSR2' })
    process.kill(info.pid, 'SIGKILL')
    await out.next((m) => m.event === 'signal' && m.signal === 'SIGUSR2', 15_000 * slow, 'the death signal')
    const onExit = await out.next((m) => m.event === 'onExit', 15_000 * slow, 'onExit')
    expect(onExit.info).toMatchObject({ parentPid: info.pid, mechanism: 'pdeathsig' })
    await waitFor(() => isGone(ready.pid), 10_000 * slow, 'the watcher to exit')
  })

  it('waitid(WSTOPPED|WNOHANG|WNOWAIT): a stopped child reads as stopped, a continued one as not', async () => {
    expect(await run('stopped')).toEqual({ before: false, whenStopped: true, afterCont: false })
  })

  it('PR_SET_CHILD_SUBREAPER: an orphan comes to us and is reaped', async (ctx) => {
    const seen = await run('subreaper')
    if (emulator && seen.set === 'EINVAL') return ctx.skip(`${emulator} refuses PR_SET_CHILD_SUBREAPER (EINVAL, seen here): checked on arm64 hardware by the workflow`)
    expect(seen).toMatchObject({ set: null, is: true, ppid: seen.self, reaped: true })
  })

  it('the prebuilt supervisor: --version, and a command\'s exit status passed through', async () => {
    const version = inRoot([`${PREBUILD}/reapkit-supervise`, '--version'])
    expect(await exitOf(version.child, 30_000 * slow), version.stderr()).toEqual({ code: 0, signal: null })
    expect(version.stdout()).toMatch(/^reapkit \d+\.\d+\.\d+\n$/)
    const run5 = inRoot([`${PREBUILD}/reapkit-supervise`, '--', '/bin/sh', '-c', 'exit 5'])
    expect(await exitOf(run5.child, 30_000 * slow), run5.stderr()).toEqual({ code: 5, signal: null })
  })

  it('a worker_thread loads the addon, watches, and is terminated: the env cleanup stops the watcher thread', async () => {
    const seen = await run('worker')
    expect(seen).toMatchObject({ caps: 'pidfd', terminated: 1 })
  })
})
