// The ESM entries (dist/esm/*.mjs) where an application's bundler makes one CommonJS file of it
// (`esbuild app.mjs --bundle --platform=node --format=cjs`): import.meta is empty there, and the
// entries' createRequire(import.meta.url) threw ERR_INVALID_ARG_VALUE at the bundle's first line.
// The package is laid out as npm installs it (package.json and dist/ under node_modules/reapkit),
// so that the bundler resolves `reapkit` by the package's own "exports" (the "import" condition).
// The bundle runs without the addon (it looks for it beside the bundle), as it did before the ESM
// entries took createRequire: a REAPKIT_NO_NATIVE warning, and spawn() works.
import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT } from './helpers'

const esbuild = join(ROOT, 'node_modules', '.bin', 'esbuild')
const built = existsSync(join(ROOT, 'dist', 'esm', 'index.mjs'))
const skipReason = !existsSync(esbuild) ? 'no node_modules/.bin/esbuild (a devDependency)' : !built ? 'no dist/: run npm run build:ts' : null
let project: string

/** The entry's export names as Node's own ESM loader gives them, from the installed package. */
function esmNames(entry: string): string[] {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', `import * as m from '${entry}'; console.log(JSON.stringify(Object.keys(m).sort()))`], {
    cwd: project,
    encoding: 'utf8',
    timeout: 30_000,
  })
  expect(r.status, r.stderr).toBe(0)
  return JSON.parse(r.stdout) as string[]
}

describe.skipIf(skipReason !== null)(`an ESM app bundled into CommonJS${skipReason ? ` (skipped: ${skipReason})` : ''}`, () => {
  beforeAll(() => {
    project = mkdtempSync(join(tmpdir(), 'reapkit-bundled-'))
    const pkg = join(project, 'node_modules', 'reapkit')
    mkdirSync(pkg, { recursive: true })
    cpSync(join(ROOT, 'package.json'), join(pkg, 'package.json'))
    cpSync(join(ROOT, 'dist'), join(pkg, 'dist'), { recursive: true })
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }))
  })

  afterAll(() => {
    if (project) rmSync(project, { recursive: true, force: true })
  })

  for (const entry of ['reapkit', 'reapkit/mcp', 'reapkit/testing']) {
    it(`runs: ${entry} imported, spawn() of true exits 0, Supervisor a class, the entry's exports as Node's ESM gives them`, () => {
      const name = entry.replace('/', '-')
      const app = join(project, `${name}.mjs`)
      const out = join(project, `${name}.cjs`)
      writeFileSync(
        app,
        `import { spawn, Supervisor } from 'reapkit'\n` +
          `import * as entry from '${entry}'\n` +
          `spawn('true', [], { stdio: 'ignore' }).on('exit', (code, signal) => console.log(JSON.stringify({ code, signal, supervisor: typeof Supervisor, names: Object.keys(entry).sort() })))\n`,
      )
      execFileSync(esbuild, [app, '--bundle', '--platform=node', '--format=cjs', `--outfile=${out}`, '--log-level=error'], { cwd: project, timeout: 60_000 })
      const r = spawnSync(process.execPath, [out], { cwd: project, encoding: 'utf8', timeout: 30_000 })
      expect(r.status, r.stderr).toBe(0)
      const got = JSON.parse(r.stdout.trim().split('\n').pop()!) as { code: number; signal: string | null; supervisor: string; names: string[] }
      expect(got).toEqual({ code: 0, signal: null, supervisor: 'function', names: esmNames(entry) })
      expect(got.names.length).toBeGreaterThan(3)
    })
  }
})

describe.skipIf(!built)('the ESM entry under a global require (node -e defines one, relative to its working folder)', () => {
  it('still takes its own CommonJS module, not ../cjs/index.js from that folder', () => {
    const entry = join(ROOT, 'dist', 'esm', 'index.mjs')
    const r = spawnSync(process.execPath, ['-e', `import(${JSON.stringify(entry)}).then((m) => console.log(typeof globalThis.require, typeof m.spawn, typeof m.Supervisor))`], {
      cwd: tmpdir(),
      encoding: 'utf8',
      timeout: 30_000,
    })
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout.trim()).toBe('function function function')
  })
})
