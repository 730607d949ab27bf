// The package as users get it, for the figures that depend on the install layout (the `reapkit`
// command's start-up, the install rows): `npm pack` from a copy of the sources
// (scripts/pack-copy.mjs, as test/package.test.ts packs), then `npm install --ignore-scripts` of the
// tarball into a fresh project.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { packFromCopy } from '../scripts/pack-copy.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

function npm(args, cwd, env = process.env) {
  const cli = [process.env.npm_execpath, join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js')]
    .find((p) => p && p.endsWith('.js') && existsSync(p))
  if (!cli) throw new Error('bench: cannot find npm-cli.js')
  const r = spawnSync(process.execPath, [cli, ...args], { cwd, env, encoding: 'utf8', timeout: 900_000 })
  if (r.status !== 0) throw new Error(`bench: npm ${args.join(' ')} failed (${r.status}):\n${r.stdout}\n${r.stderr}`)
}

/**
 * Packs and installs reapkit into a temporary project. Returns the installed command
 * (`node_modules/.bin/reapkit`, npm's symlink), the tarball (for ./install.mjs) and `cleanup()`,
 * which removes everything.
 */
export function installPacked() {
  const work = mkdtempSync(join(tmpdir(), 'reapkit-bench-pack-'))
  try {
    const tarball = packFromCopy(root, work, { npm: (args, cwd, env) => npm(args, cwd, env) })
    const project = join(work, 'app')
    mkdirSync(project)
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }))
    npm(['install', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', tarball], project)
    const bin = join(project, 'node_modules', '.bin', 'reapkit')
    if (!existsSync(bin)) throw new Error('bench: the installed package has no node_modules/.bin/reapkit')
    return { bin, tarball, cleanup: () => rmSync(work, { recursive: true, force: true }) }
  } catch (err) {
    rmSync(work, { recursive: true, force: true })
    throw err
  }
}
