#!/usr/bin/env node
/*
 * reapkit-win [--close-timeout MS] [--] COMMAND [ARGS...]: the `reapkit` command on Windows.
 *
 * `bin/reapkit` is a sh script (it execs the native supervisor, faster than Node can start), which
 * npm's Windows shims cannot run, so Windows gets this entry. It runs COMMAND under reapkit-job.exe
 * (native/win/job_launcher.c): in a kill-on-close Job object before it runs, every descendant in
 * it. The launcher watches every ancestor of this process (`--host ancestors`): behind launchers
 * such as npx.cmd's cmd.exe the host is further up, and the first death among them is the host's.
 * Then, after the close timeout (default 2000 ms, REAPKIT_CLOSE_TIMEOUT_MS) for the command to
 * leave by itself, the whole job is ended and confirmed empty. If this process or the launcher is
 * killed, the kernel ends the job. The exit status is the command's.
 *
 * A COMMAND that resolves to a .cmd/.bat file (npx, uvx shims) runs through `cmd.exe /d /s /c`;
 * cmd.exe re-parses that line, so arguments with cmd.exe's special characters are refused.
 *
 * A container run (`docker run -i --rm IMAGE`, podman, nerdctl, `container run`, after global
 * flags) is recognized and labelled as the library's spawn() does it, and once the job has ended,
 * whatever ended it, its container is ended through the engine before this process exits
 * (lib/cli/win-containers.ts, built to dist/cjs): ending the job ends the client only, and the
 * container belongs to the engine's daemon. `--no-container` runs it as a plain command.
 */
'use strict'
const { spawn } = require('node:child_process')
const { existsSync, statSync } = require('node:fs')
const path = require('node:path')

function fail(message, status = 2) {
  process.stderr.write(`reapkit-win: ${message}\n`)
  process.exit(status)
}

if (process.platform !== 'win32') fail('this is the Windows entry of the reapkit command; run `reapkit` here')

const USAGE = `Usage: reapkit-win [--close-timeout MS] [--no-container] [--] command [args...]

Runs command in a kill-on-close Job object: when the host that started it dies, or this wrapper
is killed, the whole tree goes. A docker/podman/nerdctl run's container is stopped through the
engine once the command has ended (--no-container: not). Exit status: the command's; 123 when
its container was not confirmed gone.
`
const argv = process.argv.slice(2)
let closeTimeout = null
let containers = true
let i = 0
for (; i < argv.length; i++) {
  const a = argv[i]
  if (a === '--') {
    i++
    break
  }
  if (a === '--help' || a === '-h') {
    process.stdout.write(USAGE)
    process.exit(0)
  }
  if (a === '--version') {
    process.stdout.write(`reapkit ${require('../package.json').version}\n`)
    process.exit(0)
  }
  if (a === '--close-timeout') {
    closeTimeout = Number(argv[++i])
    if (!Number.isInteger(closeTimeout) || closeTimeout < 0 || closeTimeout > 3600000) fail('--close-timeout takes milliseconds (0 to 3600000)')
    continue
  }
  if (a === '--no-container') {
    containers = false
    continue
  }
  if (a.startsWith('-')) fail(`unknown option ${a}\n${USAGE}`)
  break
}
const [command, ...commandArgs] = argv.slice(i)
if (!command) fail(`no command\n${USAGE}`)
if (closeTimeout === null) {
  // As the library reads its knobs: clamp and default, never a throw on the shutdown path.
  const env = Number(process.env.REAPKIT_CLOSE_TIMEOUT_MS)
  closeTimeout = Number.isFinite(env) && process.env.REAPKIT_CLOSE_TIMEOUT_MS !== '' ? Math.min(30000, Math.max(250, Math.round(env))) : 2000
}

const launcher = path.join(__dirname, '..', 'prebuilds', 'win32-x64', 'reapkit-job.exe')
if (!existsSync(launcher)) fail(`${launcher} is missing: this package has no win32-x64 prebuild`, 125)

/** Where Windows would find `name`: a path with an extension, or PATH x PATHEXT, as cmd.exe looks. */
function resolveCommand(name) {
  const exts = (process.env.PATHEXT || '.COM;.EXE;.BAT;.CMD').split(';').filter(Boolean)
  const isFile = (p) => {
    try {
      return statSync(p).isFile()
    } catch {
      return false
    }
  }
  const candidates = (base) => (path.extname(base) ? [base, ...exts.map((e) => base + e)] : exts.map((e) => base + e))
  if (/[\\/:]/.test(name)) return candidates(name).find(isFile) || null
  for (const dir of [process.cwd(), ...(process.env.PATH || '').split(';').filter(Boolean)]) {
    const found = candidates(path.join(dir, name)).find(isFile)
    if (found) return found
  }
  return null
}

const resolved = resolveCommand(command)
if (resolved === null) fail(`${command}: not found`, 127)
// Windows drops trailing dots and spaces from a file name: "x.cmd." is x.cmd.
const viaCmd = /\.(bat|cmd)$/i.test(resolved.replace(/[. ]+$/, ''))
// A container run: its args with the library's labels, and its record (null: a plain command).
const ctr = containers && !viaCmd ? require('../dist/cjs/reapkit-win-containers.js') : null
const run = ctr && ctr.containerRunOf(resolved, commandArgs)
const args = run ? run.args : commandArgs
let file = resolved
let fileArgs = args
if (viaCmd) {
  // cmd.exe re-parses its line: only arguments it cannot misread (CVE-2024-27980, "BatBadBut").
  for (const a of [resolved, ...args]) {
    if (/["&|<>^%!\r\n]/.test(a)) fail(`argument ${JSON.stringify(a)} has a character cmd.exe would re-interpret; ${command} is a batch file`)
  }
  const quote = (a) => (a === '' || /[\s(),;=]/.test(a) ? `"${a}"` : a)
  file = process.env.ComSpec || 'cmd.exe'
  fileArgs = ['/d', '/s', '/c', `"${[resolved, ...args].map(quote).join(' ')}"`]
}
const own = ['--host', 'ancestors', '--close-timeout', String(closeTimeout), '--']
const quoted = (p) => (viaCmd && /\s/.test(p) ? `"${p}"` : p)
const child = spawn(launcher, [...own, quoted(file), ...fileArgs], {
  stdio: 'inherit',
  windowsVerbatimArguments: viaCmd,
  argv0: quoted(launcher),
})

const CONTAINER_LEFT = 123 // a container the command started was not confirmed gone (as on Linux)
const hurry = new AbortController()
let ending = false
/**
 * Exits with `status` once the run's container, if any, is ended through the engine (bounded: the
 * library's grace, then the engine's kill, confirmed gone); one not confirmed gone is named on
 * stderr and the status is 123, as the reapkit command's on Linux (a host's configuration is the
 * same on both: the same status must mean the same).
 */
function exitAfterContainer(status, clientKilled) {
  if (ending) return
  ending = true
  if (!run) process.exit(status)
  ctr.endContainerRun(run.record, { clientKilled, abortSignal: hurry.signal }).then((outcome) => {
    const report = ctr.outcomeReport(run.record, outcome)
    if (report === '') return process.exit(status)
    const exit = () => process.exit(CONTAINER_LEFT)
    process.stderr.on('error', exit) // the host, and its end of the pipe, may be gone
    process.stderr.write(report, exit)
    setTimeout(exit, 2000) // a pipe nobody reads
  })
}
// Ctrl+C and Ctrl+Break reach the command through the shared console: it decides. This process
// waits for the launcher, whose exit is the command's; during the container's stop, they end its
// grace (the engine's kill now).
for (const sig of ['SIGINT', 'SIGBREAK']) process.on(sig, () => ending && hurry.abort())
// The console closing (SIGHUP): Windows ends this process a few seconds later, whatever it does,
// and the launcher with it: the container is killed through the engine now.
if (run) {
  process.on('SIGHUP', () => {
    hurry.abort()
    exitAfterContainer(1, true)
  })
}
child.on('error', (err) => fail(`cannot start ${launcher}: ${err.message}`, 125))
// The job's end (TerminateJobObject) leaves the client exit status 1: it may have been cut short.
child.on('exit', (code) => exitAfterContainer(code === null ? 1 : code, code === null || code === 1))
