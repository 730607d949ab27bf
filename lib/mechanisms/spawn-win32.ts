/**
 * spawn() on Windows: the child runs in a kill-on-close Job object before it runs a single
 * instruction. Node's spawn cannot create a process suspended, so the command is started through
 * reapkit-job.exe (native/win/job_launcher.c, shipped beside the addon): the launcher creates the
 * job, creates the command suspended, assigns it, resumes it, and stays as its parent. So:
 *
 * - the ChildProcess is the launcher; its pid is the launcher's, its stdio is the command's (the
 *   launcher passes its own handles down), its exit status is the command's;
 * - everything the command starts is in the job, without breakaway (the server behind `npx`
 *   included), and the job is ended, and confirmed empty, when the command exits, when
 *   killProcessGracefully asks (stop/job-unit.ts), when the launcher is terminated (Node's
 *   `subprocess.kill()`: the kernel closes the job) and when this process dies by any means;
 * - `parentDeathSignal` (default on) has the launcher also wait on this process's handle, so the
 *   job ends with this process even for a `detached` child, which Node keeps out of its own job.
 *
 * `.bat` and `.cmd` files (npm's `npx.cmd`, `uvx` shims) run through cmd.exe, which parses its
 * command line again by its own rules. Like Node since its 2024 security releases
 * (CVE-2024-27980, CVE-2024-36138: trailing dots and spaces too), they are refused without
 * `shell: true`; with it, the command line is built as Node builds it (`cmd.exe /d /s /c "..."`),
 * and quoting the arguments is the caller's job. The launcher refuses a batch program as well.
 *
 * The command is looked up as libuv looks it up (searchPath), and the launcher is given the path
 * found: so the child's argv[0] is that path, and `argv0` is not passed on.
 */
import type { ChildProcess, SpawnOptions as NodeSpawnOptions } from 'node:child_process'
import { statSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { systemError } from '../ground/errors'
import { jobLauncherPath } from '../ground/native'
import type { SpawnFunction } from './node-spawn'

/** A batch file by its name, as Windows opens it: trailing dots and spaces are dropped ("x.bat. ."). */
const isBatch = (file: string): boolean => /\.(bat|cmd)$/i.test(file.replace(/[. ]+$/, ''))

/**
 * Where libuv's spawn would find `command` (its search_path): a name with a directory is taken as
 * it is, else the current directory and then each PATH entry; a name with an extension is tried
 * as it is and then with .com and .exe, one without only with .com and .exe. null: not found, and
 * Node's own spawn then reports it ('error' with ENOENT).
 */
function searchPath(command: string, options: NodeSpawnOptions): string | null {
  const isFile = (p: string): boolean => {
    try {
      return statSync(p).isFile()
    } catch {
      return false
    }
  }
  const base = basename(command)
  const names = base.includes('.') ? ['', '.com', '.exe'] : ['.com', '.exe']
  const cwd = typeof options.cwd === 'string' ? options.cwd : options.cwd ? fileURLToPath(options.cwd) : process.cwd()
  const env = options.env ?? process.env
  const pathVar = Object.keys(env).find((k) => k.toUpperCase() === 'PATH')
  const dirs = /[\\/:]/.test(command) ? [''] : [cwd, ...(pathVar ? String(env[pathVar]).split(';') : [])].filter(Boolean)
  for (const dir of dirs) {
    for (const ext of names) {
      const candidate = dir ? join(dir, command + ext) : resolve(cwd, command + ext)
      if (isFile(candidate)) return candidate
    }
  }
  return null
}

/**
 * Starts `command` under reapkit-job.exe. null when the launcher is not shipped (no addon) or the
 * command cannot be found (Node's own spawn then emits its ENOENT 'error', as on a direct spawn).
 */
export function spawnInJob(
  nodeSpawn: SpawnFunction,
  command: string,
  args: string[],
  options: NodeSpawnOptions,
  dieWithHost: boolean,
): ChildProcess | null {
  const launcher = jobLauncherPath()
  if (launcher === null) return null
  let file: string | null = command
  let argv = args
  let verbatim = options.windowsVerbatimArguments === true
  if (options.shell) {
    file = typeof options.shell === 'string' ? options.shell : process.env.ComSpec || 'cmd.exe'
    const line = [command, ...args].join(' ')
    if (/^(?:.*\\)?cmd(?:\.exe)?$/i.test(file)) {
      argv = ['/d', '/s', '/c', `"${line}"`]
      verbatim = true
    } else {
      argv = ['-c', line]
    }
  }
  if (isBatch(file)) {
    throw systemError(
      'EINVAL',
      'spawn',
      `${file} is a batch file: cmd.exe would re-parse its arguments. Pass { shell: true } (and quote the arguments for cmd.exe), as Node requires since CVE-2024-27980`,
    )
  }
  const program = searchPath(file, options)
  if (program === null) return null
  const own = [...(dieWithHost ? ['--host', String(process.pid)] : []), '--']
  // Verbatim: libuv joins the arguments with spaces and quotes none, not even the program's own
  // name, so the paths are quoted here (the launcher's after_argv0 reads a quoted argv[0]).
  const quoted = (path: string): string => (verbatim && /[\s"]/.test(path) ? `"${path}"` : path)
  const child = nodeSpawn(launcher, [...own, quoted(program), ...argv], {
    ...options,
    shell: false,
    windowsVerbatimArguments: verbatim,
    argv0: quoted(launcher),
  })
  // What the caller asked for, not the launcher.
  ;(child as { spawnfile: string }).spawnfile = file
  ;(child as { spawnargs: string[] }).spawnargs = [options.argv0 ?? file, ...argv]
  return child
}
