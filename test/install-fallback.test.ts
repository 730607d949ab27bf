// An install that never fails (issue 29, item 3): where no prebuild fits and no compiler is there,
// `npm install` of a package that depends on reapkit succeeds, reapkit loads on its fallbacks,
// capabilities() says what is missing and why, and the first call that needs the addon warns once.
//
// The tarball is packed without any prebuild (an unsupported target, as far as it knows), and the
// consumer installs it with npm and a PATH that holds node and sh only: no cc, c++, make, python3.
// A control installs the same tarball with the old `install: node-gyp-build` script, which must
// fail there: proof that the environment really cannot build, and that the old script broke installs.
// scripts/install-fallback-bullseye.sh repeats the consumer install in a Debian 11 root without
// build-essential (there the linux-x64 prebuild ships, and does not load: glibc 2.31).
import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FIXTURES, ROOT } from './helpers'
import { npm, npmCli } from './node-versions'

const linux = process.platform === 'linux'
let work: string
let tarball: string
let oldTarball: string
let prebuiltTarball: string
let bareEnv: NodeJS.ProcessEnv
const timings: Record<string, number> = {}

/** Runs npm in `cwd` with `env`; its status and output, and how long it took. */
function npmRun(args: string[], cwd: string, env: NodeJS.ProcessEnv, label: string) {
  const t0 = Date.now()
  const r = spawnSync(process.execPath, [npmCli(), ...args], { cwd, env, encoding: 'utf8', timeout: 300_000 })
  timings[label] = Date.now() - t0
  return r
}

function consumer(name: string, extra: Record<string, unknown> = {}): string {
  const dir = join(work, name)
  mkdirSync(dir)
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `app-${name}`, version: '1.0.0', private: true, ...extra }))
  return dir
}

const installArgs = (tgz: string) => ['install', '--prefer-offline', '--no-audit', '--no-fund', tgz]

describe.runIf(linux)('installing reapkit where nothing can build the addon (PATH: node and sh only)', () => {
  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'reapkit-noprebuild-'))
    // The sources with dist/ (built by `npm run build:ts`), without any build or prebuild binary.
    const src = join(work, 'src')
    const skip = new Set(['node_modules', 'build', 'build-cmake', '.git', '.cache'])
    cpSync(ROOT, src, {
      recursive: true,
      filter: (from) => {
        const rel = relative(ROOT, from)
        if (rel === '') return true
        const top = rel.split('/')[0]!
        return !skip.has(top) && !(top === 'prebuilds' && rel !== 'prebuilds' && rel !== 'prebuilds/README.md') && !rel.endsWith('.tgz')
      },
    })
    if (!existsSync(join(src, 'dist', 'cjs', 'index.js'))) throw new Error('dist/ is not built: run npm run build:ts')
    symlinkSync(join(ROOT, 'node_modules'), join(src, 'node_modules'))
    const t0 = Date.now()
    npm(['pack', '--ignore-scripts', '--pack-destination', work], src) // no prepack: no prebuild made
    timings.pack = Date.now() - t0
    tarball = join(work, readdirSync(work).find((f) => f.endsWith('.tgz'))!)
    const listing = execFileSync('tar', ['-tzf', tarball]).toString()
    if (listing.includes('.node\n')) throw new Error('the tarball carries an addon')

    // The usual case: the same package with this checkout's build as its linux-x64 prebuild.
    const withPrebuild = join(work, 'with-prebuild')
    mkdirSync(withPrebuild)
    execFileSync('tar', ['-xzf', tarball, '-C', withPrebuild])
    const pre = join(withPrebuild, 'package', 'prebuilds', 'linux-x64')
    mkdirSync(pre, { recursive: true })
    cpSync(join(ROOT, 'build', 'Release', 'reapkit.node'), join(pre, 'reapkit.node'))
    for (const f of readdirSync(join(ROOT, 'build', 'Release', 'helper'))) cpSync(join(ROOT, 'build', 'Release', 'helper', f), join(pre, f))
    prebuiltTarball = join(work, 'reapkit-prebuilt.tgz')
    execFileSync('tar', ['-czf', prebuiltTarball, '-C', withPrebuild, 'package'])

    // The control: the same package with the install script it had before (node-gyp-build).
    const old = join(work, 'old')
    mkdirSync(old)
    execFileSync('tar', ['-xzf', tarball, '-C', old])
    const pkgFile = join(old, 'package', 'package.json')
    const pkg = JSON.parse(readFileSync(pkgFile, 'utf8'))
    pkg.scripts.install = 'node-gyp-build'
    writeFileSync(pkgFile, JSON.stringify(pkg, null, 2))
    oldTarball = join(work, 'reapkit-old.tgz')
    execFileSync('tar', ['-czf', oldTarball, '-C', old, 'package'])

    // A PATH with node and sh (npm runs scripts through sh) and nothing else: no cc, c++, make, python3.
    const bin = join(work, 'bin')
    mkdirSync(bin)
    symlinkSync(process.execPath, join(bin, 'node'))
    symlinkSync('/bin/sh', join(bin, 'sh'))
    for (const tool of ['cc', 'c++', 'g++', 'make', 'python3']) {
      if (spawnSync('/bin/sh', ['-c', `command -v ${tool}`], { env: { PATH: bin } }).status === 0) throw new Error(`${tool} is on the bare PATH`)
    }
    bareEnv = { PATH: bin, HOME: process.env.HOME, npm_config_cache: process.env.npm_config_cache }
    if (!bareEnv.npm_config_cache) delete bareEnv.npm_config_cache
  }, 300_000)

  afterAll(() => {
    if (Object.keys(timings).length > 0) console.log(`install-fallback timings (ms): ${JSON.stringify(timings)}`)
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('control: the old `install: node-gyp-build` fails the whole npm install there', () => {
    const app = consumer('control')
    const r = npmRun(installArgs(oldTarball), app, bareEnv, 'installOld')
    expect(r.status, r.stdout + r.stderr).not.toBe(0)
    expect(r.stderr).toMatch(/gyp ERR!/)
  }, 300_000)

  it('where the prebuild loads, the install script is a quiet no-op: exit 0, nothing built, no report, no warning', () => {
    const app = consumer('prebuilt')
    const r = npmRun(installArgs(prebuiltTarball), app, bareEnv, 'installPrebuilt')
    expect(r.status, r.stdout + r.stderr).toBe(0)
    const pkgDir = join(app, 'node_modules', 'reapkit')
    expect(existsSync(join(pkgDir, 'build'))).toBe(false)
    const script = "const r = require('reapkit'); const c = r.spawn(process.execPath, ['-e', ''], { stdio: 'ignore' }); " +
      "c.on('exit', () => setImmediate(() => console.log(JSON.stringify({ caps: r.capabilities(), info: r.spawnedInfo(c).parentDeathSignal }))))"
    const run = spawnSync(process.execPath, ['-e', script], { cwd: app, env: bareEnv, encoding: 'utf8', timeout: 30_000 })
    expect(run.status, run.stderr).toBe(0)
    expect(run.stderr).toBe('') // no warning
    const out = JSON.parse(run.stdout)
    expect(out.caps).toMatchObject({ native: true, pdeathsig: true, execHelper: true, missing: [] })
    expect(out.info).toBe('SIGKILL')
  }, 300_000)

  it('npm install exits 0 (the install script runs, finds no toolchain, and records it); require works on the fallbacks, says why, and warns once', () => {
    const app = consumer('default')
    const r = npmRun(installArgs(tarball), app, bareEnv, 'install')
    expect(r.status, r.stdout + r.stderr).toBe(0)
    const pkgDir = join(app, 'node_modules', 'reapkit')
    // npm 11.x runs a dependency's install script unless allowScripts denies it (a notice lists it).
    const report = JSON.parse(readFileSync(join(pkgDir, 'build', 'reapkit-install.json'), 'utf8'))
    expect(report).toMatchObject({ status: 'no-toolchain', missing: ['python3', 'make', 'a C compiler (cc)', 'a C++17 compiler (c++)'] })
    expect(existsSync(join(pkgDir, 'build', 'Release'))).toBe(false)

    const fixture = join(app, 'no-native.cjs')
    cpSync(join(FIXTURES, 'no-native.cjs'), fixture)
    const t0 = Date.now()
    const run = spawnSync(process.execPath, [fixture], { cwd: app, env: bareEnv, encoding: 'utf8', timeout: 60_000 })
    timings.fixture = Date.now() - t0
    expect(run.status, run.stderr).toBe(0)
    const out = JSON.parse(run.stdout.trim().split('\n').pop()!)

    // capabilities(): what is missing, and why.
    expect(out.caps).toMatchObject({ native: false, pidfd: false, pdeathsig: false, exitWatch: 'poll', parentWatch: 'poll', execHelper: false, supervisor: false })
    const names = (out.caps.missing as string[]).map((m) => m.split(':')[0])
    expect(names).toEqual(['parentDeathSignal', 'exitWatch', 'pinnedHandle', 'parentWatch', 'processGroups', 'subreaper', 'supervisor'])
    expect(out.caps.loadError).toMatch(/^No native build was found for platform=linux arch=x64/)
    expect(out.caps.loadError).toContain('This copy of the package carries no prebuilds.')
    expect(out.caps.loadError).toContain("reapkit's install script could not build the addon: python3, make, a C compiler (cc), a C++17 compiler (c++) not found on PATH.")
    expect(out.caps.loadError).toContain('npm install-scripts approve reapkit')

    // One warning, with its code, from the first call that needed the addon (spawn), none before.
    expect(out.warningsAtLoad).toBe(0)
    expect(out.warningsAfterSpawn).toBe(1)
    expect(out.warnings).toHaveLength(1)
    expect(out.warnings[0]).toMatchObject({ name: 'Warning', code: 'REAPKIT_NO_NATIVE' })
    expect(out.warnings[0].message).toMatch(/^reapkit's native addon is not loaded, so spawn\(\) arms no parent-death signal: the child outlives this process if it is SIGKILLed\. No prebuilt addon fits linux-x64 here, and reapkit's install script could not build the addon: python3, make/)
    expect(out.warnings[0].detail).toMatch(/capabilities\(\)\.missing/)

    // The fallbacks, for real: a group through setsid, a graceful stop, an exit seen by the poll.
    expect(out.spawned).toEqual({ pgid: true, parentDeathSignal: null, startup: 'none' })
    expect(out.stopped).toEqual({ survivors: 0, signals: ['SIGTERM'] })
    expect(out.exit).toMatchObject({ pid: true, settledEarly: false, childSignal: 'SIGKILL' })
    expect(out.parentMechanism).toBe('poll')
    expect(out.prctl).toBe('ENOTSUP') // a call that cannot fall back throws, never a silent no-op

    // The warning as a user sees it on stderr, and silenced by its code.
    const shown = spawnSync(process.execPath, ['-e', "require('reapkit').spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })"], { cwd: app, env: bareEnv, encoding: 'utf8', timeout: 30_000 })
    expect(shown.status, shown.stderr).toBe(0)
    expect(shown.stderr.match(/\[REAPKIT_NO_NATIVE\]/g)).toHaveLength(1)
    const silenced = spawnSync(process.execPath, ['--disable-warning=REAPKIT_NO_NATIVE', '-e', "require('reapkit').spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })"], { cwd: app, env: bareEnv, encoding: 'utf8', timeout: 30_000 })
    expect(silenced.status, silenced.stderr).toBe(0)
    expect(silenced.stderr).not.toContain('REAPKIT_NO_NATIVE')
  }, 300_000)

  it('with install scripts skipped (--ignore-scripts; pnpm 10, Bun, an npm allowScripts denial alike) the install exits 0 and loadError says the script did not run', () => {
    const app = consumer('skipped')
    const r1 = npmRun(['install', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', tarball], app, bareEnv, 'installIgnoreScripts')
    expect(r1.status, r1.stdout + r1.stderr).toBe(0)
    expect(existsSync(join(app, 'node_modules', 'reapkit', 'build'))).toBe(false)
    const run = spawnSync(process.execPath, ['-e', "console.log(JSON.stringify(require('reapkit').capabilities()))"], { cwd: app, env: bareEnv, encoding: 'utf8', timeout: 30_000 })
    expect(run.status, run.stderr).toBe(0)
    const caps = JSON.parse(run.stdout)
    expect(caps.native).toBe(false)
    expect(caps.loadError).toContain("reapkit's install script, which builds the addon where no prebuild fits, has not run here")
  }, 300_000)

  it('where the toolchain is there but the build fails, the script still exits 0 and keeps node-gyp\'s output; in a checkout it fails', () => {
    const app = join(work, 'default')
    const pkgDir = join(app, 'node_modules', 'reapkit')
    // The machine's python3, make and cc, with a C++ compiler that always fails; headers from this
    // machine's Node (no download).
    const env = { PATH: `${join(work, 'bin')}:/usr/bin:/bin`, HOME: process.env.HOME, CXX: '/bin/false', npm_config_nodedir: process.env.npm_config_nodedir ?? '/usr' }
    // `npm rebuild reapkit`, the loader's advice, runs the install script again (npm hands it node-gyp).
    const r = npmRun(['rebuild', 'reapkit', '--foreground-scripts'], app, env, 'rebuildFailing')
    expect(r.status, r.stdout + r.stderr).toBe(0)
    expect(r.stdout + r.stderr).toMatch(/reapkit: building the addon failed \(node-gyp exited with \d+\)/)
    const report = JSON.parse(readFileSync(join(pkgDir, 'build', 'reapkit-install.json'), 'utf8'))
    expect(report).toMatchObject({ status: 'build-failed', why: expect.stringMatching(/^node-gyp exited with \d+$/) })
    expect(readFileSync(report.log, 'utf8')).toMatch(/gyp ERR! stack Error: `make` failed/) // configure passed: the compiler failed
    const caps = spawnSync(process.execPath, ['-e', "console.log(require('reapkit').capabilities().loadError)"], { cwd: app, env: bareEnv, encoding: 'utf8', timeout: 30_000 })
    expect(caps.stdout).toContain(`reapkit's install script could not build the addon: node-gyp exited with`)
    expect(caps.stdout).toContain(`(node-gyp's output: ${join(pkgDir, 'build', 'reapkit-install.log')})`)

    // The same package outside node_modules is a checkout: there a missing toolchain is an error.
    const checkout = join(work, 'old', 'package')
    const strict = spawnSync(process.execPath, [join(checkout, 'scripts', 'install-addon.js')], { cwd: checkout, env: bareEnv, encoding: 'utf8', timeout: 60_000 })
    expect(strict.status).toBe(1)
    expect(strict.stderr).toMatch(/building one needs python3, make/)
  }, 600_000)
})
