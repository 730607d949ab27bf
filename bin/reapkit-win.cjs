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

const USAGE = `Usage: reapkit-win [--close-timeout MS] [--] command [args...]

Runs command in a kill-on-close Job object: when the host that started it dies, or this wrapper
is killed, the whole tree goes. Exit status: the command's.
`
const argv = process.argv.slice(2)
let closeTimeout = null
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
  if (a.startsWith('-')) fail(`unknown option ${a}\n${USAGE}`)
  break
}
const [command, ...args] = argv.slice(i)
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
// Ctrl+C and Ctrl+Break reach the command through the shared console: it decides. This process
// waits for the launcher, whose exit is the command's.
for (const sig of ['SIGINT', 'SIGBREAK']) process.on(sig, () => {})
child.on('error', (err) => fail(`cannot start ${launcher}: ${err.message}`, 125))
child.on('exit', (code) => process.exit(code === null ? 1 : code))
