// What a user gets where no addon loads (no prebuild for the platform, nothing built): the library
// still loads, and its error says what the package carries and what building one takes.
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

describe('the addon loader, with no addon to load', () => {
  it('says which prebuilds exist, that it falls back to node-gyp, and what to install; supervisorPath() throws ENOTSUP', () => {
    // The package's CommonJS bundle in a package of its own with no build/ and no prebuilds/.
    const pkg = mkdtempSync(join(tmpdir(), 'reapkit-noaddon-'))
    dirs.push(pkg)
    mkdirSync(join(pkg, 'dist', 'cjs'), { recursive: true })
    cpSync(join(ROOT, 'dist', 'cjs', 'index.js'), join(pkg, 'dist', 'cjs', 'index.js'))
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
    expect(caps.loadError).toMatch(/carries prebuilds for linux-x64 \(glibc\) and win32-x64 only/)
    // Here no prebuild was there to load; the message cannot tell a missing one from a broken one.
    const here = `${process.platform}-${process.arch}`
    const where = ['linux-x64', 'win32-x64'].includes(here) ? `the ${here} one is missing or did not load here (musl, for one, needs a build of its own), so` : `on ${here}`
    expect(caps.loadError).toContain(`${where} the addon is built at install time by node-gyp`)
    expect(caps.loadError).toMatch(/Python 3, make and a C\+\+17 compiler/)
    expect(thrown).toMatchObject({ code: 'ENOTSUP' })
    expect(thrown.message).toMatch(/^supervisorPath ENOTSUP \(this build of reapkit has no native supervisor: the addon did not load/)
  })
})
