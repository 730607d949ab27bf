#!/usr/bin/env node
// reapkit's `install` script: an install step that cannot fail the install of a package that
// depends on reapkit.
//
// 1. The addon this package would load at run time (a local build, else the prebuild for this
//    platform, libc and arch, as node-gyp-build picks it) loads in a fresh Node: done, nothing
//    built. The check runs in a child process, as node-gyp-build's own does, so a prebuild that
//    crashes on load cannot take this script down with it.
// 2. Otherwise, where Python 3, make and C/C++ compilers are on PATH, node-gyp builds it.
// 3. Where the toolchain is missing or the build fails, this script still exits 0: reapkit then
//    runs on its JavaScript fallbacks, capabilities() lists what is missing, and the first call
//    that needs the addon emits one process warning (REAPKIT_NO_NATIVE). What happened here is
//    kept in build/reapkit-install.json (and node-gyp's output in build/reapkit-install.log), so
//    that the loader can say why there is no addon; npm shows a script's output only when it fails.
//
// In reapkit's own checkout (a folder not inside node_modules) a failed build fails the script, as
// a contributor wants. `--build-from-source` (npm_config_build_from_source) builds even where a
// prebuild loads, as node-gyp-build's install does.
'use strict'
const { spawnSync } = require('node:child_process')
const { accessSync, constants, existsSync, mkdirSync, rmSync, statSync, writeFileSync } = require('node:fs')
const { delimiter, dirname, isAbsolute, join, sep } = require('node:path')

const ROOT = dirname(__dirname)
const BUILD = join(ROOT, 'build')
const REPORT = join(BUILD, 'reapkit-install.json')
const LOG = join(BUILD, 'reapkit-install.log')
const checkout = !ROOT.split(sep).includes('node_modules')
// A build on a slow machine takes minutes; a hung one must not hang the install for ever.
const BUILD_TIMEOUT_MS = 20 * 60_000

function addonFile() {
  try {
    return require('node-gyp-build').path(ROOT)
  } catch {
    return null
  }
}

/** Loads `file` in a fresh Node: null when it loads, else why not (its first line or two). */
function loadError(file) {
  const r = spawnSync(process.execPath, ['-e', 'require(process.argv[1])', file], { encoding: 'utf8', timeout: 60_000, windowsHide: true })
  if (r.status === 0) return null
  const why = (r.stderr || '').split('\n').find((l) => /Error|error:/.test(l)) || `exit ${r.status ?? r.signal}`
  return why.trim()
}

/** The first of `names` that is an executable file on PATH (or an absolute path), else null. */
function onPath(names) {
  const dirs = (process.env.PATH || '').split(delimiter).filter(Boolean)
  for (const name of names) {
    if (!name) continue
    const candidates = isAbsolute(name) ? [name] : dirs.map((d) => join(d, name))
    for (const file of candidates) {
      try {
        accessSync(file, constants.X_OK)
        if (statSync(file).isFile()) return file
      } catch {
        // not here
      }
    }
  }
  return null
}

/** What node-gyp needs that is not here (POSIX; on Windows node-gyp finds Visual Studio itself). */
function missingTools() {
  if (process.platform === 'win32') return []
  const env = process.env
  const first = (v) => (v ? v.trim().split(/\s+/)[0] : '')
  const missing = []
  if (!onPath([first(env.npm_config_python), first(env.PYTHON), 'python3', 'python'])) missing.push('python3')
  const bsd = /bsd$/.test(process.platform)
  if (!onPath([first(env.MAKE), bsd ? 'gmake' : 'make'])) missing.push(bsd ? 'gmake' : 'make')
  if (!onPath([first(env.CC), 'cc', 'gcc', 'clang'])) missing.push('a C compiler (cc)')
  if (!onPath([first(env.CXX), 'c++', 'g++', 'clang++'])) missing.push('a C++17 compiler (c++)')
  return missing
}

/**
 * node-gyp as npm hands it to install scripts, else one installed beside reapkit, else the one npm
 * bundles beside this Node (run by hand: node scripts/install-addon.js), else the one on PATH.
 */
function nodeGypCommand() {
  const fromNpm = process.env.npm_config_node_gyp
  if (fromNpm && /\.js$/.test(fromNpm)) return [process.execPath, fromNpm]
  try {
    return [process.execPath, require.resolve('node-gyp/bin/node-gyp.js')]
  } catch {
    // not installed here
  }
  const prefix = dirname(dirname(process.execPath))
  for (const lib of [join(prefix, 'lib'), prefix]) {
    const bundled = join(lib, 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js')
    if (existsSync(bundled)) return [process.execPath, bundled]
  }
  return [process.platform === 'win32' ? 'node-gyp.cmd' : 'node-gyp']
}

function report(result) {
  try {
    mkdirSync(BUILD, { recursive: true })
    writeFileSync(REPORT, JSON.stringify({ ...result, node: process.version, platform: `${process.platform}-${process.arch}`, at: new Date().toISOString() }, null, 2) + '\n')
  } catch {
    // a read-only package folder: the loader then says only that no addon was found
  }
}

function note(lines) {
  // npm 7+ shows this only with --foreground-scripts, or when the script fails.
  process.stderr.write(lines.map((l) => `reapkit: ${l}\n`).join(''))
}

function main() {
  rmSync(REPORT, { force: true })
  const fromSource = process.env.npm_config_build_from_source === 'true'
  const file = fromSource ? null : addonFile()
  const unloadable = file ? loadError(file) : null
  if (file && !unloadable) return 0 // the usual case: a prebuild (or an earlier build) loads here

  const prebuild = file ? { prebuild: file, prebuildError: unloadable } : {}
  const missing = missingTools()
  if (missing.length > 0) {
    report({ status: 'no-toolchain', missing, ...prebuild })
    note([
      file ? `the addon ${file} does not load here (${unloadable}),` : `no prebuilt addon for ${process.platform}-${process.arch} in this package,`,
      `and building one needs ${missing.join(', ')}, not found on PATH.`,
      'reapkit works without it on its JavaScript fallbacks: see capabilities().missing.',
    ])
    return checkout ? 1 : 0
  }

  const [cmd, ...args] = nodeGypCommand()
  const started = Date.now()
  const r = spawnSync(cmd, [...args, 'rebuild'], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
    timeout: BUILD_TIMEOUT_MS,
    killSignal: 'SIGKILL',
    shell: process.platform === 'win32' && !isAbsolute(cmd),
    windowsHide: true,
  })
  const output = `${r.stdout || ''}${r.stderr || ''}${r.error ? `\n${r.error.message}\n` : ''}`
  process.stderr.write(output) // shown by npm when this script fails, or with --foreground-scripts
  const built = r.status === 0 ? addonFile() : null
  const builtError = built ? loadError(built) : null
  if (built && !builtError) return 0
  const why = r.error ? r.error.message : r.status !== 0 ? `node-gyp exited with ${r.status ?? r.signal}` : builtError || 'node-gyp made no addon'
  try {
    mkdirSync(BUILD, { recursive: true })
    writeFileSync(LOG, output)
  } catch {
    // as for the report
  }
  report({ status: 'build-failed', why, ms: Date.now() - started, log: LOG, ...prebuild })
  note([`building the addon failed (${why}); node-gyp's output is in ${LOG}.`, 'reapkit works without it on its JavaScript fallbacks: see capabilities().missing.'])
  return checkout ? 1 : 0
}

let code = 0
try {
  code = main()
} catch (err) {
  // Whatever went wrong here, a dependent's install must not fail for it.
  note([`the install step failed unexpectedly: ${err && err.stack ? err.stack : err}`])
  code = checkout ? 1 : 0
}
process.exitCode = code
