// Shared test helpers: every process a test starts leads its own process group (or lives in one a
// test owns), and setup.ts kills every such group after each test, pass or fail. Nothing is ever
// killed by name; only pgids this file created.
import { type ChildProcess, execFileSync, type SpawnOptions, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'

export const ROOT = join(__dirname, '..')
/** The built CommonJS entry; `npm test` builds it first. Fixture scripts load it. */
export const DIST = join(ROOT, 'dist', 'cjs', 'index.js')
export const FIXTURES = join(__dirname, 'fixtures')

const groups = new Set<ChildProcess>()
const children = new Set<ChildProcess>()
const extraGroups = new Set<number>()

/** Registers a process group some fixture created, for the after-test cleanup to kill. */
export function trackGroup(pgid: number): void {
  if (Number.isInteger(pgid) && pgid > 1) extraGroups.add(pgid)
}

/** spawn() a plain child of this test process (same group); cleanup kills it by its ChildProcess. */
export function spawnChild(command: string, args: string[], options: SpawnOptions = {}): ChildProcess {
  const child = spawn(command, args, { stdio: 'ignore', ...options })
  if (child.pid !== undefined) children.add(child)
  return child
}

/** spawn() into a new process group (and session) that the test cleanup kills as a whole. */
export function spawnGroup(command: string, args: string[], options: SpawnOptions = {}): ChildProcess {
  const child = spawn(command, args, {
    stdio: ['ignore', 'pipe', 'inherit'],
    ...options,
    detached: true,
    env: { ...process.env, REAPKIT_DIST: DIST, ...options.env },
  })
  if (child.pid !== undefined) groups.add(child)
  return child
}

/** Runs a fixture script (test/fixtures/NAME) with node, in its own group. */
export function spawnFixture(name: string, args: string[] = [], options: SpawnOptions = {}): ChildProcess {
  return spawnGroup(process.execPath, [join(FIXTURES, name), ...args], options)
}

const linux = process.platform === 'linux'

/** `ps` rows (pid, pgid, state) where there is no /proc (macOS, the BSDs). */
function psRows(): Array<{ pid: number; pgid: number; state: string }> {
  const r = spawnSync('ps', ['-A', '-o', 'pid=,pgid=,stat='], { encoding: 'utf8' })
  return r.stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length >= 3)
    .map(([pid, pgid, state]) => ({ pid: Number(pid), pgid: Number(pgid), state: state! }))
}

/** Exited, reaped, or a zombie: all count as gone. */
export function isGone(pid: number): boolean {
  if (!linux) {
    const row = psRows().find((r) => r.pid === pid)
    return !row || row.state.startsWith('Z')
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
    return state === 'Z' || state === 'X'
  } catch {
    return true
  }
}

/** Pids of live (non-zombie) processes in process group `pgid`. */
export function groupMembers(pgid: number): number[] {
  if (!linux) return psRows().filter((r) => r.pgid === pgid && !r.state.startsWith('Z')).map((r) => r.pid)
  return liveProcesses()
    .filter((p) => Number(p.fields[2]) === pgid)
    .map((p) => p.pid)
}

/** Every live process (not a zombie, not dead), Linux: its pid, command name and `/proc/PID/stat` fields after the name ([state, ppid, pgrp, ...]). */
export function liveProcesses(): Array<{ pid: number; comm: string; fields: string[] }> {
  const out: Array<{ pid: number; comm: string; fields: string[] }> = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (fields[0] !== 'Z' && fields[0] !== 'X') out.push({ pid: Number(entry), comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), fields })
    } catch {
      // gone meanwhile
    }
  }
  return out
}

/** Polls `predicate` every 10 ms until true, or throws after `timeoutMs`. Test-side only. */
export async function waitFor(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** SIGKILLs every group spawned through this file and waits (bounded) until each is empty. */
export async function killAllGroups(): Promise<string[]> {
  const survivors: string[] = []
  for (const child of children) {
    // ChildProcess.kill() is a no-op once libuv has reaped the child: never a recycled pid.
    child.kill('SIGKILL')
    try {
      await exitOf(child, 5000)
    } catch {
      survivors.push(`child ${child.pid}`)
    }
  }
  children.clear()
  for (const pgid of extraGroups) {
    if (groupMembers(pgid).length === 0) continue // never signal a group id nobody of ours holds
    try {
      process.kill(-pgid, 'SIGKILL')
    } catch {
      // already empty
    }
    try {
      await waitFor(() => groupMembers(pgid).length === 0, 5000, `group ${pgid} to empty`)
    } catch {
      survivors.push(`group ${pgid}: ${groupMembers(pgid).join(', ')}`)
    }
  }
  extraGroups.clear()
  for (const child of groups) {
    const pgid = child.pid!
    if (groupMembers(pgid).length === 0) continue // empty: its id may name someone else's group by now
    try {
      process.kill(-pgid, 'SIGKILL')
    } catch {
      // already empty
    }
  }
  for (const child of groups) {
    const pgid = child.pid!
    try {
      await waitFor(() => groupMembers(pgid).length === 0, 5000, `group ${pgid} to empty`)
    } catch {
      survivors.push(`group ${pgid}: ${groupMembers(pgid).join(', ')}`)
    }
    child.stdout?.destroy()
    child.stderr?.destroy()
  }
  groups.clear()
  return survivors
}

/** Reads newline-delimited JSON from a stream; `next(pred)` waits (bounded) for a matching line. */
export function jsonLines(stream: Readable) {
  const seen: any[] = []
  const waiters: Array<{ pred: (m: any) => boolean; resolve: (m: any) => void }> = []
  let buf = ''
  stream.setEncoding('utf8')
  stream.on('data', (chunk: string) => {
    buf += chunk
    let nl: number
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl)
      buf = buf.slice(nl + 1)
      if (!line.trim()) continue
      let msg: any
      try {
        msg = JSON.parse(line)
      } catch {
        msg = { raw: line }
      }
      seen.push(msg)
      for (const w of [...waiters]) {
        if (w.pred(msg)) {
          waiters.splice(waiters.indexOf(w), 1)
          w.resolve(msg)
        }
      }
    }
  })
  return {
    seen,
    next(pred: (m: any) => boolean, timeoutMs = 10_000, what = 'a matching line'): Promise<any> {
      const found = seen.find(pred)
      if (found) return Promise.resolve(found)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1)
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; seen: ${JSON.stringify(seen)}`))
        }, timeoutMs)
        const w = {
          pred,
          resolve: (m: any) => {
            clearTimeout(timer)
            resolve(m)
          },
        }
        waiters.push(w)
      })
    },
  }
}

/** Waits (bounded) for a ChildProcess to exit; resolves with code/signal. */
export function exitOf(child: ChildProcess, timeoutMs = 15_000): Promise<{ code: number | null; signal: string | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode })
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`pid ${child.pid} did not exit within ${timeoutMs} ms`)), timeoutMs)
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal })
    })
  })
}

/**
 * SIGKILLs each child (by its ChildProcess: a no-op once reaped, never a recycled pid), waits
 * (bounded) for each to exit, and empties the set; returns the pids of those that did not exit.
 */
export async function killChildren(children: Set<ChildProcess>, timeoutMs = 5000): Promise<number[]> {
  const survivors: number[] = []
  for (const child of children) {
    child.kill('SIGKILL')
    await exitOf(child, timeoutMs).catch(() => survivors.push(child.pid!))
  }
  children.clear()
  return survivors
}

/** Number of open file descriptors of this process. */
export function openFds(): number {
  return readdirSync(linux ? '/proc/self/fd' : '/dev/fd').length
}

/**
 * Whether this machine lets us make a private PID namespace (`unshare --pid`, as root). Tests that
 * feed hostile pids or force pid reuse run only inside one; elsewhere they are reported skipped.
 */
export const canUnshare: boolean =
  linux && spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true'], { stdio: 'ignore', timeout: 10_000 }).status === 0

/**
 * The pid a command gets when `launcher -- sh -c 'echo $$'` runs as PID 1 of a new PID namespace
 * (needs canUnshare): the launcher, exec'd into the supervisor, is 1, so the command is 2 unless
 * something else was started first (each readlink, uname or `$(...)` subshell takes a pid).
 */
export function commandPid(launcher: string, env: NodeJS.ProcessEnv = process.env): number {
  // By its path: `env` may hold a PATH without it (a test's node-only PATH).
  const unshare = ['/usr/bin/unshare', '/bin/unshare'].find((f) => existsSync(f)) ?? 'unshare'
  const r = spawnSync(unshare, ['--pid', '--fork', launcher, '--', '/bin/sh', '-c', 'echo $$'], { encoding: 'utf8', timeout: 20_000, env })
  if (r.status !== 0) throw new Error(`unshare ${launcher} exited ${r.status}: ${r.stderr}`)
  return Number(r.stdout.trim())
}

/** `/proc/PID/stat` fields after the command name: [state, ppid, pgrp, session, ...], or null when gone. */
export function procStat(pid: number): string[] | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return s.slice(s.lastIndexOf(')') + 2).split(' ')
  } catch {
    return null
  }
}

/** The children of `pid` (Linux's children file). */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/** Every descendant of `pid`, depth first. */
export function descendants(pid: number): number[] {
  return childrenOf(pid).flatMap((c) => [c, ...descendants(c)])
}

/** This process's children that are zombies (adopted and not yet reaped, or libuv's not yet reaped). */
export function zombieChildren(): number[] {
  return childrenOf(process.pid).filter((pid) => procStat(pid)?.[0] === 'Z')
}

/**
 * Builds bench/fixtures/exit-floor.c (static where the C library allows) into a scratch folder:
 * the tiny C programs the scale tests start by the thousand. `remove()` deletes the folder.
 */
export function buildExitFloor(tag: string): { bin: string; remove(): void } {
  const dir = mkdtempSync(join(os.tmpdir(), `reapkit-${tag}-`))
  const bin = join(dir, 'exit-floor')
  const src = join(ROOT, 'bench', 'fixtures', 'exit-floor.c')
  const r = spawnSync('cc', ['-O2', '-static', '-o', bin, src])
  if (r.status !== 0) execFileSync('cc', ['-O2', '-o', bin, src])
  return { bin, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/**
 * This machine's machine field of an owner label, read here independently of both writers:
 * `mid:<32 hex>` from /etc/machine-id, else /var/lib/dbus/machine-id (exactly 32 lowercase hex
 * digits, a newline at most after them), else `mid:-`.
 */
export function machineIdField(): string {
  for (const file of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
    try {
      const text = readFileSync(file, 'latin1')
      if (/^[0-9a-f]{32}\n?$/.test(text)) return `mid:${text.slice(0, 32)}`
    } catch {} // missing or unreadable: the next one
  }
  return 'mid:-'
}
