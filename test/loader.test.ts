// What a user gets where no addon loads (no prebuild for the platform, nothing built): the library
// still loads, and its error says what the package carries, what the install step did and how to get the addon.
import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ROOT } from './helpers'

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/** The package's CommonJS bundle: index.js and the parts it loads on first use (node-gyp-build's search among them). */
function copyBundle(pkg: string): void {
  cpSync(join(ROOT, 'dist', 'cjs', 'index.js'), join(pkg, 'dist', 'cjs', 'index.js'))
  cpSync(join(ROOT, 'dist', 'cjs', 'parts'), join(pkg, 'dist', 'cjs', 'parts'), { recursive: true })
}

describe('the addon loader, with no addon to load', () => {
  it('says that this copy carries no prebuild, that the install script did not run, and how to get the addon; supervisorPath() throws ENOTSUP', () => {
    // The package's CommonJS bundle in a package of its own with no build/ and no prebuilds/.
    const pkg = mkdtempSync(join(tmpdir(), 'reapkit-noaddon-'))
    dirs.push(pkg)
    mkdirSync(join(pkg, 'dist', 'cjs'), { recursive: true })
    copyBundle(pkg)
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'reapkit', version: '0.0.0' }))
    writeFileSync(join(pkg, 'binding.gyp'), '{}')
    const script = `
      const r = require(${JSON.stringify(join(pkg, 'dist', 'cjs', 'index.js'))})
      let thrown = null
      try { r.supervisorPath() } catch (err) { thrown = { code: err.code, message: err.message } }
      console.log(JSON.stringify({ caps: r.capabilities(), thrown }))`
    // Without the loader's overrides (an explicit addon file, a prebuild tag): the plain search.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(REAPKIT_ADDON|REAPKIT_PREBUILD|PREBUILDS_ONLY)$/.test(k)))
    const out = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000, env })
    expect(out.status, out.stderr).toBe(0)
    const { caps, thrown } = JSON.parse(out.stdout)
    expect(caps).toMatchObject({ native: false, supervisor: false })
    expect(caps.loadError).toMatch(/^No native build was found for /)
    expect(caps.loadError).toContain('This copy of the package carries no prebuilds.')
    // No install report beside it: the install script never ran.
    expect(caps.loadError).toContain("reapkit's install script, which builds the addon where no prebuild fits, has not run here")
    expect(caps.loadError).toMatch(/install Python 3, make and a C\/C\+\+17 compiler .* npm install-scripts approve reapkit.* run `npm rebuild reapkit`\.$/)
    if (process.platform === 'linux') expect(caps.missing.map((m: string) => m.split(':')[0])).toContain('parentDeathSignal')
    expect(thrown).toMatchObject({ code: 'ENOTSUP' })
    expect(thrown.message).toMatch(/^supervisorPath ENOTSUP \(this build of reapkit has no native supervisor: the addon did not load/)
  })

  it('names the prebuilds the package carries (libc tags included) and what the install script recorded', () => {
    const pkg = mkdtempSync(join(tmpdir(), 'reapkit-noaddon-'))
    dirs.push(pkg)
    mkdirSync(join(pkg, 'dist', 'cjs'), { recursive: true })
    copyBundle(pkg)
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'reapkit', version: '0.0.0' }))
    writeFileSync(join(pkg, 'binding.gyp'), '{}')
    // Prebuilds for other targets only (never loaded here: no platform matches this one).
    const others = ['sunos-sparc', 'aix-ppc64']
    mkdirSync(join(pkg, 'prebuilds', others[0]!), { recursive: true })
    writeFileSync(join(pkg, 'prebuilds', others[0]!, 'reapkit.glibc.node'), '')
    writeFileSync(join(pkg, 'prebuilds', others[0]!, 'reapkit.musl.node'), '')
    mkdirSync(join(pkg, 'prebuilds', others[1]!), { recursive: true })
    writeFileSync(join(pkg, 'prebuilds', others[1]!, 'reapkit.node'), '')
    writeFileSync(join(pkg, 'prebuilds', 'README.md'), '')
    mkdirSync(join(pkg, 'build'))
    writeFileSync(join(pkg, 'build', 'reapkit-install.json'), JSON.stringify({ status: 'no-toolchain', missing: ['python3', 'make'] }))
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(REAPKIT_ADDON|REAPKIT_PREBUILD|PREBUILDS_ONLY)$/.test(k)))
    const out = spawnSync(process.execPath, ['-e', `console.log(require(${JSON.stringify(join(pkg, 'dist', 'cjs', 'index.js'))}).capabilities().loadError)`], { encoding: 'utf8', timeout: 30_000, env })
    expect(out.status, out.stderr).toBe(0)
    expect(out.stdout).toContain('This copy of the package carries prebuilds for aix-ppc64; sunos-sparc (glibc, musl).')
    expect(out.stdout).toContain("reapkit's install script could not build the addon: python3, make not found on PATH.")
  })
})
