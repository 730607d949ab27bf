// spawn({ pidNamespace: true }): the child's whole tree ends when its host dies by any means,
// SIGKILL included, done by the kernel (lib/mechanisms/pid-namespace.ts, native/exec_pidns.c).
// The host-death scenarios run inside `unshare --pid --fork --mount-proc` (pidns-scenario.cjs):
// the host's SIGKILL, and the survivors of the control run, can touch only that namespace.
import { spawn as nodeSpawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { capabilities, killProcessGracefully, spawn, spawnedInfo } from '../lib/index'
import { execHelperPath } from '../lib/ground/native'
import { DIST, FIXTURES, canUnshare, exitOf, jsonLines, killAllGroups, spawnGroup, waitFor } from './helpers'

const linux = process.platform === 'linux'
const available = linux && execHelperPath() !== null && capabilities().pidNamespace.available
const root = linux && process.getuid!() === 0
// The unprivileged route, tried as the kernel will see it: the helper asked for a namespace as nobody.
const unprivileged =
  available && root && spawnSync(execHelperPath()!, ['--pid-namespace', '0', '9', '0', '-1', 'true', 'true'], { uid: 65534, gid: 65534, timeout: 10_000 }).status === 0

const children = new Set<ReturnType<typeof spawn>>()
afterEach(async () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await exitOf(child, 5000).catch(() => {})
  }
  children.clear()
  expect(await killAllGroups()).toEqual([])
})

function track<T extends ReturnType<typeof spawn>>(child: T): T {
  if (child.pid !== undefined) children.add(child)
  return child
}

function output(child: ReturnType<typeof spawn>): Promise<string> {
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += String(d)))
  return exitOf(child).then(() => out)
}

interface Proc { pid: number; start: string; sid: number; comm: string }

/** One host-death scenario, as PID 1 of a PID namespace of its own; its JSON result. */
async function scenario(args: string[]): Promise<{ host: { event: string; pidNamespace?: boolean }; tree: Proc[]; survivors: Proc[]; ms: number }> {
  const ns = spawnGroup('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, join(FIXTURES, 'pidns-scenario.cjs'), ...args])
  const result = await jsonLines(ns.stdout!).next((m: { event: string }) => m.event === 'result' || m.event === 'error', 45_000)
  await exitOf(ns, 10_000)
  return result
}

describe.skipIf(!linux || !canUnshare || !available)('spawn({ pidNamespace }): the host is SIGKILLed', () => {
  it('every process of the tree ends with the host: the setsid grandchild and the double-forked daemon included', async () => {
    const r = await scenario(['1'])
    expect(r.host).toMatchObject({ event: 'ready', pidNamespace: true })
    // The tree: the host, the helper and the namespace's init, the shell, its three sleeps.
    const sleeps = r.tree.filter((p) => p.comm === 'sleep')
    expect(sleeps.length).toBe(3)
    const shell = r.tree.find((p) => p.comm === 'sh')!
    // Two of them left the shell's session: the escapees a group kill misses.
    expect(sleeps.filter((p) => p.sid !== shell.sid).length).toBe(2)
    expect(r.tree.filter((p) => p.comm === 'reapkit-exec').length).toBe(2)
    expect(r.survivors).toEqual([])
  }, 60_000)

  it('without it the escapees outlive the host: the check above can fail', async () => {
    const r = await scenario(['0', '', '1000'])
    expect(r.host).toMatchObject({ event: 'ready', pidNamespace: false })
    // The parent-death signal ends the shell; the sleeps, its grandchildren, are nobody's.
    expect(r.survivors.length).toBe(3)
  }, 60_000)

  for (const via of ['supervisor', 'transport'] as const) {
    it(`through ${via === 'supervisor' ? 'Supervisor.spawn' : "the MCP StdioClientTransport's pidNamespace option"} the same; without it the same three survive`, async () => {
      const r = await scenario(['1', '', '5000', via])
      expect(r.host).toMatchObject({ event: 'ready', pidNamespace: true })
      expect(r.tree.filter((p) => p.comm === 'sleep').length).toBe(3)
      expect(r.tree.filter((p) => p.comm === 'reapkit-exec').length).toBe(2)
      expect(r.survivors).toEqual([])
      const control = await scenario(['0', '', '1000', via])
      expect(control.survivors.length).toBe(3)
    }, 90_000)
  }

  it.skipIf(!unprivileged)('as an unprivileged user too (a user namespace of its own)', async () => {
    const r = await scenario(['1', '65534'])
    expect(r.host).toMatchObject({ event: 'ready', pidNamespace: true })
    expect(r.tree.length).toBeGreaterThanOrEqual(7)
    expect(r.survivors).toEqual([])
  }, 60_000)
})

describe.skipIf(!available)('spawn({ pidNamespace }): the child as its host sees it', () => {
  it('passes the exit code through, and a death by signal as that signal', async () => {
    const code = track(spawn('sh', ['-c', 'exit 7'], { pidNamespace: true, stdio: 'ignore' }))
    expect(spawnedInfo(code)).toMatchObject({ pidNamespace: true, pgid: code.pid, parentDeathSignal: 'SIGKILL', startup: 'exec' })
    expect(await exitOf(code)).toEqual({ code: 7, signal: null })
    const killed = track(spawn('sh', ['-c', 'kill -TERM $$'], { pidNamespace: true, stdio: 'ignore' }))
    expect(await exitOf(killed)).toEqual({ code: null, signal: 'SIGTERM' })
  })

  it('a command that cannot be run fails as Node reports it (ENOENT, no pid), through the helper', async () => {
    const child = track(spawn('reapkit-no-such-command', [], { pidNamespace: true, stdio: 'ignore' }))
    const err = await new Promise<NodeJS.ErrnoException>((resolve) => child.once('error', resolve))
    expect(err).toMatchObject({ code: 'ENOENT', syscall: 'spawn reapkit-no-such-command', path: 'reapkit-no-such-command' })
    expect(child.pid).toBeUndefined()
  })

  it("what the command left running ends with it: no grandchild holds its pipes, 'close' follows 'exit'", async () => {
    // A setsid'd grandchild that holds stdout: without the namespace, 'close' would wait for it (100 s).
    const child = track(spawn('sh', ['-c', 'setsid sleep 100 & echo started'], { pidNamespace: true, stdio: ['ignore', 'pipe', 'inherit'] }))
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()))
    expect(await output(child)).toBe('started\n')
    let timer: NodeJS.Timeout | undefined
    const bound = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("no 'close' within 10 s of 'exit'")), 10_000)))
    await Promise.race([closed, bound]).finally(() => clearTimeout(timer))
  })

  it('the program sees itself as pid 2 under init 1, in its own /proc and session', async () => {
    // `read < /proc/self/stat` is opened by the shell itself: its pid in the /proc it sees.
    const child = track(spawn('sh', ['-c', 'read pid rest < /proc/self/stat; echo $$ $pid $PPID $(ps -e -o pid= | wc -l)'], { pidNamespace: true, stdio: ['ignore', 'pipe', 'inherit'] }))
    const [self, procSelf, parent, count] = (await output(child)).trim().split(/\s+/).map(Number)
    expect([self, procSelf, parent]).toEqual([2, 2, 1])
    expect(count).toBeLessThanOrEqual(5) // init, sh, ps, wc (and the $(...) subshell): nothing of ours outside
  })

  it.skipIf(!root || !canUnshare)('what the host mounts after the spawn still reaches the program (its mount namespace is a slave)', () => {
    // In a mount namespace of the test's own with shared propagation (as systemd's root is): the
    // host mounts a tmpfs once the child runs, then lets the child look.
    const dir = mkdtempSync(join(tmpdir(), 'reapkit-pidns-mnt-'))
    try {
      const script = `
        const rk = require(${JSON.stringify(DIST)})
        const dir = ${JSON.stringify(dir)}
        const c = rk.spawn('sh', ['-c', 'read go; grep -c " ' + dir + ' " /proc/self/mountinfo'], { pidNamespace: true, stdio: ['pipe', 'pipe', 'inherit'] })
        require('node:child_process').execFileSync('mount', ['-t', 'tmpfs', 'none', dir])
        c.stdin.end('go\\n')
        c.stdout.pipe(process.stdout)`
      const r = spawnSync('unshare', ['--mount', '--propagation', 'shared', process.execPath, '-e', script], { encoding: 'utf8', timeout: 20_000 })
      expect(r.stderr).toBe('')
      expect(r.stdout.trim()).toBe('1')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('spawnedInfo().ownProc: true where the init mounted the namespace\'s /proc', async () => {
    const child = track(spawn('sh', ['-c', 'sleep 0.5'], { pidNamespace: true, stdio: 'ignore' }))
    // Said with the start, or (startup 'timeout', on a busy machine) a moment later.
    await waitFor(() => spawnedInfo(child)!.ownProc !== undefined, 10_000, 'the init to say')
    expect(spawnedInfo(child)).toMatchObject({ pidNamespace: true, ownProc: true })
    await exitOf(child)
  })

  it.skipIf(!root || !canUnshare || !canUnshareUser())('where /proc cannot be mounted (a locked overmount): ownProc false, the outer /proc seen, and a SIGTSTP still stops the command', () => {
    // A tmpfs over /proc/sys, then a user namespace: the kernel refuses a new proc mount there,
    // since it would reveal what the overmount hides. The init still finds the command in the
    // outer /proc (through a pidfd's fdinfo) to read its signal dispositions.
    const script = `
      const rk = require(${JSON.stringify(DIST)})
      const fs = require('node:fs')
      const kids = (pid) => { try { return fs.readFileSync('/proc/' + pid + '/task/' + pid + '/children', 'utf8').trim().split(/\\s+/).filter(Boolean).map(Number) } catch { return [] } }
      const state = (pid) => fs.readFileSync('/proc/' + pid + '/stat', 'utf8').split(') ')[1][0]
      const c = rk.spawn('sleep', ['30'], { pidNamespace: true, stdio: 'ignore' })
      const ownProc = rk.spawnedInfo(c).ownProc
      let command = 0, stopped = false, tries = 0
      const look = () => {
        const init = kids(c.pid)[0]
        command = init ? kids(init)[0] || 0 : 0
        if (command && !stopped && fs.readFileSync('/proc/' + command + '/comm', 'utf8').trim() === 'sleep') { stopped = true; process.kill(c.pid, 'SIGTSTP') }
        if (stopped && state(command) === 'T') return done('T')
        if (++tries > 1000) return done(command ? state(command) : 'none')
        setTimeout(look, 10)
      }
      const done = (st) => { console.log(JSON.stringify({ ownProc, state: st })); process.kill(c.pid, 'SIGCONT'); c.kill('SIGTERM') }
      look()`
    const r = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', 'mount -t tmpfs none /proc/sys && exec unshare --user --map-root-user "$0" -e "$1"', process.execPath, script], { encoding: 'utf8', timeout: 30_000 })
    expect(r.stderr).toBe('')
    expect(JSON.parse(r.stdout.trim())).toEqual({ ownProc: false, state: 'T' })
  })

  // Review of the musl-linked helper: musl's sigaction refuses 32-34, so the helper took 34 (glibc's
  // SIGRTMIN) to its default action and died with the tree instead of passing it on.
  it.runIf(spawnSync('python3', ['--version'], { stdio: 'ignore' }).status === 0)('real-time signals reach the command: 34 (glibc\'s SIGRTMIN) and 64', async () => {
    const script = [
      'import signal, sys, time',
      "signal.signal(34, lambda s, f: print('got 34', flush=True))",
      "signal.signal(64, lambda s, f: (print('got 64', flush=True), sys.exit(5)))",
      "print('ready', flush=True)",
      'time.sleep(30)',
    ].join('\n')
    const child = track(spawn('python3', ['-c', script], { pidNamespace: true, stdio: ['ignore', 'pipe', 'inherit'] }))
    let out = ''
    child.stdout!.on('data', (d: Buffer) => (out += String(d)))
    await waitFor(() => out.includes('ready\n'), 10_000, 'the command to be ready')
    process.kill(child.pid!, 34)
    await waitFor(() => out.includes('got 34\n'), 10_000, 'signal 34 to reach the command')
    process.kill(child.pid!, 64)
    expect(await exitOf(child)).toEqual({ code: 5, signal: null })
    expect(out).toBe('ready\ngot 34\ngot 64\n')
  })

  it('a signal to the whole group reaches the command once (the init and the helper pass it on, never twice)', async () => {
    // It says "term" at each SIGTERM; once the test has seen the first, a SIGUSR2 (through the same
    // path, after it) asks for the count: a second SIGTERM, if any, would have come with the first.
    const script = "let n = 0; process.on('SIGTERM', () => { n++; console.log('term') }); process.on('SIGUSR2', () => { console.log('count ' + n); process.exit(0) }); console.log('ready'); setInterval(() => {}, 1000)"
    const child = track(spawn(process.execPath, ['-e', script], { pidNamespace: true, stdio: ['ignore', 'pipe', 'inherit'] }))
    let out = ''
    const saw = (word: string) => new Promise<void>((resolve) => {
      const look = () => out.includes(word) && resolve()
      child.stdout!.on('data', (d: Buffer) => { out += String(d); look() })
      look()
    })
    await saw('ready\n')
    process.kill(-child.pid!, 'SIGTERM') // the helper and the namespace's init both get it
    await saw('term\n')
    child.kill('SIGUSR2')
    await exitOf(child)
    expect(out.trim().split('\n').pop()).toBe('count 1')
  })

  it('killProcessGracefully ends the whole tree, escapees that ignore SIGTERM included, before it resolves', async () => {
    const token = randomBytes(8).toString('hex')
    const child = track(spawn('/bin/sh', [join(FIXTURES, 'pidns-tree.sh')], { pidNamespace: true, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, REAPKIT_TREE_TOKEN: token } }))
    await new Promise<void>((resolve) => child.stdout!.on('data', (d: Buffer) => String(d).includes('ready') && resolve()))
    const ofTree = (): number[] =>
      readdirSync('/proc').filter((e) => /^\d+$/.test(e)).map(Number).filter((pid) => {
        try {
          const env = readFileSync(`/proc/${pid}/environ`, 'latin1')
          const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0]
          return env.includes(`REAPKIT_TREE_TOKEN=${token}\0`) && state !== 'Z'
        } catch {
          return false
        }
      })
    expect(ofTree().length).toBeGreaterThanOrEqual(5) // helper, init, sh, the sleeps (some may not have exec'd)
    const result = await killProcessGracefully(child, { graceMs: 300 })
    expect(result.escalated).toBe(true) // the tree ignores SIGTERM
    expect(result.survivors).toEqual([])
    expect(ofTree()).toEqual([])
  })
})

describe('spawn({ pidNamespace }): where it cannot be had, it is refused, never weaker', () => {
  it('refuses a value that is not a boolean, and a death signal other than SIGKILL, before spawning', () => {
    expect(() => spawn('true', [], { pidNamespace: 'yes' as unknown as boolean })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
    for (const parentDeathSignal of ['SIGTERM', false, null] as const) {
      expect(() => spawn('true', [], { pidNamespace: true, parentDeathSignal })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
    }
  })

  it.skipIf(linux)('throws ENOTSUP off Linux', () => {
    expect(() => spawn('true', [], { pidNamespace: true })).toThrow(expect.objectContaining({ code: 'ENOTSUP' }))
  })

  it.skipIf(!linux || !available)('throws ENOTSUP with uid/gid (the helper would run as that user)', () => {
    expect(() => spawn('true', [], { pidNamespace: true, uid: process.getuid!() })).toThrow(expect.objectContaining({ code: 'ENOTSUP' }))
  })

  it.skipIf(!linux || !available)('throws ENOTSUP for a podman run (its mounts would be out of reach), before any syscall', () => {
    // /nonexistent: were it run, Node's spawn would say ENOENT instead.
    expect(() => spawn('/nonexistent/podman', ['run', '--rm', 'busybox', 'true'], { pidNamespace: true })).toThrow(expect.objectContaining({ code: 'ENOTSUP', message: expect.stringMatching(/podman/) }))
  })

  it.skipIf(!linux || !root || execHelperPath() === null || !canUnshareUser())('where the kernel refuses: capabilities() says so, and the spawn fails with EPERM and never runs the command', async () => {
    // In a user namespace where our uid is not mapped, neither route is open (no CAP_SYS_ADMIN, and
    // an unmapped uid may not make a user namespace).
    const dir = mkdtempSync(join(tmpdir(), 'reapkit-pidns-'))
    try {
      const marker = join(dir, 'ran')
      const script = `
        const rk = require(${JSON.stringify(DIST)})
        const cap = rk.capabilities().pidNamespace
        const child = rk.spawn('/bin/sh', ['-c', 'echo > ${marker}'], { pidNamespace: true, stdio: 'ignore' })
        child.on('error', (err) => { console.log(JSON.stringify({ cap, code: err.code, message: err.message, pid: child.pid })) })
        child.on('exit', (code) => console.log(JSON.stringify({ exit: code })))`
      const r = spawnSync('unshare', ['--user', process.execPath, '-e', script], { encoding: 'utf8', timeout: 20_000 })
      const said = JSON.parse(r.stdout.trim().split('\n')[0]!)
      expect(said.cap).toMatchObject({ available: false })
      expect(said.cap.reason).toMatch(/user namespaces/)
      expect(said).toMatchObject({ code: 'EPERM' })
      expect(said.pid).toBeUndefined()
      expect(said.message).toMatch(/refused a new PID namespace/)
      expect(existsSync(marker)).toBe(false)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe.skipIf(!available)('capabilities().pidNamespace: the probe', () => {
  /** capabilities().pidNamespace as a fresh Node sees it, run through LAUNCH (a command prefix) with ENV. */
  const probeIn = (launch: string[], env: NodeJS.ProcessEnv = process.env) => {
    const script = `console.log(JSON.stringify(require(${JSON.stringify(DIST)}).capabilities().pidNamespace))`
    const r = spawnSync(launch[0] ?? process.execPath, [...launch.slice(1), ...(launch.length ? [process.execPath] : []), '-e', script], { encoding: 'utf8', timeout: 30_000, env })
    expect(r.stderr).toBe('')
    return JSON.parse(r.stdout.trim())
  }

  it('needs neither PATH nor /bin/sh: it execs this Node by its absolute path', () => {
    expect(probeIn([], { ...process.env, PATH: '' })).toMatchObject({ available: true })
  })

  it.skipIf(!root || !canUnshareUser())('says the route the helper took: root inside a user namespace of its own takes the direct one', () => {
    // The uid map there is "0 0 1", as the unprivileged route's looks: the map's shape cannot tell.
    expect(probeIn(['unshare', '--user', '--map-root-user'])).toEqual({ available: true, userNamespace: false })
  })

  it.skipIf(!unprivileged)('and the user-namespace route where it is taken (nobody)', () => {
    const script = `console.log(JSON.stringify(require(${JSON.stringify(DIST)}).capabilities().pidNamespace))`
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000, uid: 65534, gid: 65534 })
    expect(JSON.parse(r.stdout.trim())).toEqual({ available: true, userNamespace: true })
  })
})

function canUnshareUser(): boolean {
  return spawnSync('unshare', ['--user', 'true'], { stdio: 'ignore', timeout: 10_000 }).status === 0
}
