/**
 * The Linux side of the Windows suite: runs the fixtures in node.exe under Wine (the toolchain and
 * prefix of scripts/win32/setup.sh, the package staged by scripts/win32/stage.sh), reads their
 * JSON results, and finds the Windows processes they started in Linux's /proc: under Wine every
 * Windows process is a Linux process whose command line shows the Windows one, and every process
 * a test starts carries that test's random tag in its command line.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

const root = resolve(__dirname, '..', '..')

/** The paths and environment of scripts/win32/env.sh, read once from the script itself. */
function wineEnv(): Record<string, string> {
  const r = spawnSync('bash', ['-c', '. scripts/win32/env.sh && env -0'], { cwd: root, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`scripts/win32/env.sh failed: ${r.stderr}`)
  const env: Record<string, string> = {}
  for (const entry of r.stdout.split('\0')) {
    const eq = entry.indexOf('=')
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1)
  }
  return env
}

export const env = wineEnv()
const cache = env.REAPKIT_WIN32_CACHE!
export const nodeExe = env.REAPKIT_WIN32_NODE_EXE!
export const stagedReapkit = join(cache, 'stage', 'node_modules', 'reapkit')
/** A stand-in for docker.exe and podman.exe (test/win32/argv-dump.c, built by scripts/win32/build.sh). */
export const argvDump = join(root, 'build-win32', 'argv-dump.exe')
/** What this machine lacks for the suite, said as a skip reason; null when all of it is there. */
export const missing: string | null = (() => {
  const needs: Array<[what: string, path: string]> = [
    ['Wine', env.REAPKIT_WINE!],
    ['node.exe', nodeExe],
    ['the staged win32-x64 prebuild', join(stagedReapkit, 'prebuilds', 'win32-x64', 'reapkit.node')],
    ['build-win32/argv-dump.exe', argvDump],
  ]
  const lacking = needs.filter(([, path]) => !existsSync(path)).map(([what]) => what)
  return lacking.length === 0 ? null : `missing ${lacking.join(', ')}: run \`npm run test:win32\` (setup, build, stage)`
})()
const runs = join(cache, 'runs')

/** A Linux path as Wine's Z: drive sees it. */
export function winPath(path: string): string {
  return 'Z:' + path.replace(/\//g, '\\')
}

export interface WineRun {
  tag: string
  child: ChildProcess
  /** The node.exe's Linux pid (wine64 execs into the Windows process). */
  pid: number
  resultFile: string
  result(): Record<string, any>
  exited: Promise<number | null>
}

/** Starts `node.exe fixtures/<name> resultFile reapkitDir tag ...args` under Wine. */
export function runFixture(name: string, args: string[] = [], tag = newTag()): WineRun {
  mkdirSync(runs, { recursive: true })
  const resultFile = join(runs, `${tag}-${name}.json`)
  const child = spawn(
    env.REAPKIT_WINE!,
    [nodeExe, winPath(join(__dirname, 'fixtures', name)), winPath(resultFile), winPath(stagedReapkit), tag, ...args],
    // stdout/stderr to /dev/null: a Linux pipe makes node.exe's writes fail (EBADF) under Wine
    { env: { ...process.env, ...env }, stdio: 'ignore' },
  )
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)))
  return {
    tag,
    child,
    pid: child.pid!,
    resultFile,
    exited,
    result() {
      try {
        return JSON.parse(readFileSync(resultFile, 'utf8')) as Record<string, any>
      } catch {
        return {}
      }
    },
  }
}

export function newTag(): string {
  return `rkw${randomBytes(6).toString('hex')}`
}

export interface TaggedProcess {
  pid: number
  cmdline: string
}

/** The live (not zombie) Linux processes whose command line carries `tag`. */
export function tagged(tag: string): TaggedProcess[] {
  const found: TaggedProcess[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim()
      if (!cmdline.includes(tag)) continue
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
      if (state !== 'Z' && state !== 'X') found.push({ pid: Number(entry), cmdline })
    } catch {
      // gone meanwhile
    }
  }
  return found
}

/** SIGKILLs every process carrying `tag` (ours: the tag is random and only our fixtures carry it). */
export function killTagged(tag: string): void {
  for (const p of tagged(tag)) {
    try {
      process.kill(p.pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
}

/** The calls a stand-in engine client (argv-dump.exe) logged to `file`, in order: [{ argv }]. */
export function engineCalls(file: string): Array<{ argv: string[] }> {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { argv: string[] })
}

export async function waitFor(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** Stops this prefix's wineserver and with it every Windows process of the prefix (ours only). */
export function stopWineserver(): void {
  spawnSync(env.REAPKIT_WINESERVER!, ['-k'], { env: { ...process.env, ...env }, stdio: 'ignore', timeout: 30_000 })
}
