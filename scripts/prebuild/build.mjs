#!/usr/bin/env node
// Builds the prebuilds this machine can build, into prebuilds/<platform>-<arch>/.
//
//   node scripts/prebuild/build.mjs [--all] [--force] [linux-x64] [linux-arm64]
//
// On linux-x64: the four Linux addons of targets.mjs, cross-built with Zig (zig.mjs) by node-gyp
// from binding.gyp, each in a staging copy under .cache/prebuild/work/ (so the checkout's own
// build/ is never touched). The helpers beside them are static, so they serve the glibc and the
// musl addon of a folder alike (bin/reapkit runs the supervisor from the folder without knowing
// the libc), from the same binding.gyp: the exec helper linked against Zig's musl (it starts
// faster; its PATH search follows glibc's execvp, native/exec_search.c), the native supervisor
// against glibc by Debian's gcc (aarch64-linux-gnu-gcc for arm64).
// Each result is checked (check.mjs) before it replaces what prebuilds/ held. A folder whose inputs
// (native/, binding.gyp, the toolchains, the version) and outputs are unchanged since its last
// build is kept as it is (--force rebuilds).
// On macOS and Windows: prebuildify builds this machine's own target with the native compiler.
// --all (npm run prebuild:all, and prepack): also the Windows prebuild (scripts/win32/prebuild.sh,
// mingw-w64), then check.mjs over every target, which fails naming anything missing.
//
// REAPKIT_PREBUILD_CACHE moves the cache (Zig, its compiled libc/libc++, stamps, staging).
// REAPKIT_PREBUILD_KEEP=1 builds nothing and ships prebuilds/ as it is (the release workflow's pack
// job: each folder there was built and checked on its own runner, and must not be rebuilt).
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { fileProblems, report } from './check.mjs'
import { inspectBinary } from './elf.mjs'
import { POSIX_HELPERS, TARGETS } from './targets.mjs'
import { ensureZig, toolchain } from './zig.mjs'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const CACHE = process.env.REAPKIT_PREBUILD_CACHE || join(ROOT, '.cache', 'prebuild')
const args = process.argv.slice(2)
const all = args.includes('--all')
const force = args.includes('--force')
const only = args.filter((a) => !a.startsWith('--'))
// Node's headers: this machine's own where they are installed (an offline build), else node-gyp's
// download (GitHub's runners).
const NODEDIR = process.env.npm_config_nodedir || (existsSync('/usr/include/node/node_api.h') ? '/usr' : '')

/** What node-gyp needs from the checkout to build (the staging copy). */
const SOURCES = ['binding.gyp', 'package.json', 'native', 'scripts/probe-cc.js']

function sha256(data) {
  return createHash('sha256').update(data).digest('hex')
}

function filesUnder(path) {
  if (!statSync(path).isDirectory()) return [path]
  return readdirSync(path).sort().flatMap((f) => filesUnder(join(path, f)))
}

/** A hash of everything a Linux folder's build reads: sources, build scripts, toolchain choice. */
function inputsHash(dir) {
  const h = createHash('sha256').update(dir)
  const files = [...SOURCES.filter((s) => s !== 'package.json'), 'scripts/prebuild/build.mjs', 'scripts/prebuild/zig.mjs', 'scripts/prebuild/targets.mjs']
  for (const file of files.flatMap((f) => filesUnder(join(ROOT, f)))) h.update(relative(ROOT, file)).update(readFileSync(file))
  h.update(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version) // the supervisor's --version
  h.update(JSON.parse(readFileSync(join(ROOT, 'node_modules', 'node-addon-api', 'package.json'), 'utf8')).version)
  h.update(NODEDIR)
  for (const cc of Object.values(HELPER_CC)) h.update(spawnSync(cc, ['-dumpfullversion'], { encoding: 'utf8' }).stdout ?? '')
  return h.digest('hex')
}

const stampFile = (dir) => join(CACHE, 'stamps', `${dir}.json`)

function outputsHash(dir, names) {
  return Object.fromEntries(names.map((n) => [n, existsSync(join(ROOT, 'prebuilds', dir, n)) ? sha256(readFileSync(join(ROOT, 'prebuilds', dir, n))) : null]))
}

function upToDate(dir, names, inputs) {
  if (force || !existsSync(stampFile(dir))) return false
  const stamp = JSON.parse(readFileSync(stampFile(dir), 'utf8'))
  return stamp.inputs === inputs && JSON.stringify(stamp.outputs) === JSON.stringify(outputsHash(dir, names))
}

function run(cmd, argv, options) {
  const r = spawnSync(cmd, argv, { stdio: 'inherit', ...options })
  if (r.status !== 0) throw new Error(`${cmd} ${argv.join(' ')} failed (${r.status ?? r.signal})`)
  return r
}

/** A fresh staging copy of what node-gyp reads, for one build (`name`). */
function stage(name) {
  const dir = join(CACHE, 'work', name)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(join(dir, 'scripts'), { recursive: true })
  for (const s of SOURCES) cpSync(join(ROOT, s), join(dir, s), { recursive: true })
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  mkdirSync(join(CACHE, 'logs'), { recursive: true })
  writeFileSync(join(CACHE, 'logs', `${name}.log`), '') // this build's log only
  return dir
}

/** Runs a build step in `cwd`, its output to the log of `name` (printed in part when it fails). */
function step(name, cwd, env, cmd, argv) {
  const log = join(CACHE, 'logs', `${name}.log`)
  const r = spawnSync(cmd, argv, { cwd, env, encoding: 'utf8', maxBuffer: 64 << 20 })
  writeFileSync(log, `${r.stdout ?? ''}${r.stderr ?? ''}`, { flag: 'a' })
  if (r.status !== 0) {
    console.error(`${r.stdout ?? ''}${r.stderr ?? ''}`.split('\n').slice(-40).join('\n'))
    throw new Error(`${name}: ${cmd} ${argv[0] ?? ''} failed (${r.status ?? r.signal}); the whole log is ${log}`)
  }
}

const GYP = join(ROOT, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js')
const JOBS = String(availableParallelism())

function gypEnv(cc, cxx) {
  const env = { ...process.env, CC: cc, CXX: cxx, LINK: cxx }
  if (NODEDIR) env.npm_config_nodedir = NODEDIR
  return env
}

/** node-gyp rebuild of a staging copy with Zig for one target; returns the stripped addon. */
function addonBuild(zig, target) {
  const tools = toolchain(zig, CACHE, target.zig)
  const dir = stage(target.name)
  const started = Date.now()
  step(target.name, dir, gypEnv(tools.cc, tools.cxx), process.execPath, [GYP, 'rebuild', '--release', `--arch=${target.cpu}`, '-j', JOBS])
  const addon = join(dir, 'build', 'Release', 'reapkit.node')
  run(tools.strip, [addon, '--strip-all'])
  console.error(`== ${target.name}: addon built with zig (${target.zig}) in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  return addon
}

/** The C compiler that links the helpers of `cpu` statically against glibc (Debian's gcc, or its cross gcc). */
const HELPER_CC = { x64: 'x86_64-linux-gnu-gcc', arm64: 'aarch64-linux-gnu-gcc' }
const HELPER_APT = { x64: 'gcc libc6-dev', arm64: 'gcc-aarch64-linux-gnu libc6-dev-arm64-cross' }

/**
 * The helpers of one Linux folder: binding.gyp's helper targets only; returns their folder. The
 * native supervisor is made with gcc (static glibc); the exec helper, which every spawn() starts,
 * with Zig's musl for the folder's arch (binding.gyp takes it from REAPKIT_MUSL_CC): a static musl
 * program starts ~0.3 ms sooner than a static glibc one, and the helper's PATH search is glibc's
 * rules written out (native/exec_search.c), so the libc does not change what it runs.
 */
function helperBuild(zig, dir, cpu) {
  const cc = HELPER_CC[cpu]
  if (spawnSync(cc, ['--version'], { stdio: 'ignore' }).status !== 0) throw new Error(`${dir}: the helpers need ${cc} (apt-get install ${HELPER_APT[cpu]})`)
  const musl = TARGETS.find((t) => t.dir === dir && t.libc === 'musl')
  const name = `${dir}-helpers`
  const work = stage(name)
  const started = Date.now()
  const env = { ...gypEnv(cc, cc), REAPKIT_MUSL_CC: toolchain(zig, CACHE, musl.zig).cc }
  step(name, work, env, process.execPath, [GYP, 'configure', '--release', `--arch=${cpu}`])
  // binding.gyp falls back to the gcc (glibc) link when the musl compiler fails its probe: not for a release.
  if (!readFileSync(join(work, 'build', 'reapkit-exec.target.mk'), 'utf8').includes('reapkit_exec_musl_static')) {
    throw new Error(`${name}: binding.gyp did not take Zig's musl cc for reapkit-exec (its probe failed: node scripts/probe-cc.js musl-cc ${cpu} with REAPKIT_MUSL_CC=${env.REAPKIT_MUSL_CC})`)
  }
  step(name, work, env, 'make', ['-C', 'build', 'BUILDTYPE=Release', '-j', JOBS, ...POSIX_HELPERS])
  console.error(`== ${name}: reapkit-exec static with Zig's musl (${musl.zig}), reapkit-supervise static with ${cc}, in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  return join(work, 'build', 'Release', 'helper')
}

/** Builds one Linux folder (both libcs and the shared helpers), checks it, then installs it. */
function buildLinuxDir(zig, dir) {
  const targets = TARGETS.filter((t) => t.dir === dir && t.how === 'zig')
  const names = [...targets.map((t) => t.addon), ...POSIX_HELPERS]
  const inputs = inputsHash(dir)
  if (upToDate(dir, names, inputs)) {
    console.error(`== ${dir}: up to date (inputs and outputs unchanged since the last build; --force rebuilds)`)
    return
  }
  const ready = join(CACHE, 'ready', dir)
  rmSync(ready, { recursive: true, force: true })
  mkdirSync(ready, { recursive: true })
  for (const target of targets) copyFileSync(addonBuild(zig, target), join(ready, target.addon))
  const helpers = helperBuild(zig, dir, targets[0].cpu)
  for (const h of POSIX_HELPERS) copyFileSync(join(helpers, h), join(ready, h))
  const problems = targets.flatMap((t) => [t.addon, ...POSIX_HELPERS].flatMap((n) => fileProblems(t, n, inspectBinary(join(ready, n)))))
  if (problems.length) throw new Error(`${dir}: the build is unfit to ship:\n  ${[...new Set(problems)].join('\n  ')}`)
  const out = join(ROOT, 'prebuilds', dir)
  rmSync(out, { recursive: true, force: true })
  mkdirSync(out, { recursive: true })
  for (const n of names) cpSync(join(ready, n), join(out, n), { preserveTimestamps: true })
  mkdirSync(dirname(stampFile(dir)), { recursive: true })
  writeFileSync(stampFile(dir), JSON.stringify({ inputs, outputs: outputsHash(dir, names) }, null, 2))
  console.error(`== ${dir}: ${names.join(', ')} -> prebuilds/${dir}/`)
}

/** macOS and Windows: this machine's own target, with prebuildify and the native compiler. */
function buildNative() {
  const bin = join(ROOT, 'node_modules', '.bin', process.platform === 'win32' ? 'prebuildify.cmd' : 'prebuildify')
  run(bin, ['--napi', '--strip', '--artifacts', 'build/Release/helper'], { cwd: ROOT, shell: process.platform === 'win32' })
}

const started = Date.now()
try {
  if (process.env.REAPKIT_PREBUILD_KEEP === '1') {
    console.error('== prebuild: REAPKIT_PREBUILD_KEEP=1: nothing built, prebuilds/ is shipped as it is')
  } else if (process.platform === 'linux') {
    const dirs = only.length ? only : [...new Set(TARGETS.filter((t) => t.how === 'zig').map((t) => t.dir))]
    const unknown = dirs.filter((d) => !TARGETS.some((t) => t.how === 'zig' && t.dir === d))
    if (unknown.length) throw new Error(`not a Linux prebuild folder: ${unknown.join(', ')}`)
    const zig = ensureZig(CACHE)
    for (const dir of dirs) buildLinuxDir(zig, dir)
    // Its failure (no mingw-w64, no earlier win32-x64 here) is the check's to report, with the rest.
    if (all) spawnSync('bash', [join(ROOT, 'scripts', 'win32', 'prebuild.sh')], { stdio: 'inherit' })
  } else {
    buildNative()
  }
  console.error(`== prebuild: ${((Date.now() - started) / 1000).toFixed(1)} s`)
  if (all) process.exitCode = report(join(ROOT, 'prebuilds'))
} catch (err) {
  console.error(`prebuild: ${err.message}`)
  process.exitCode = 1
}
