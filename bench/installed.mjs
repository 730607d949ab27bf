// The package as users get it, for the figures that depend on the install layout (the `reapkit`
// command's start-up): `npm pack` (its prepack builds the prebuild) from a copy of the sources, so
// that prebuildify never moves this checkout's build/ away, then `npm install --ignore-scripts` of
// the tarball into a fresh project. The same steps as test/package.test.ts, without the Windows
// prebuild (REAPKIT_PREBUILD_WIN32=skip), which no Linux figure needs.
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

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
    const src = join(work, 'src')
    const skip = new Set(['node_modules', 'build', 'build-cmake', 'dist', '.git', '.cache'])
    cpSync(root, src, {
      recursive: true,
      filter: (from) => {
        const rel = relative(root, from)
        if (rel === '') return true
        const top = rel.split('/')[0]
        return !skip.has(top) && !(top === 'prebuilds' && rel.endsWith('.node')) && !rel.endsWith('.tgz') && !(top === 'bench' && rel.startsWith('bench/results'))
      },
    })
    symlinkSync(join(root, 'node_modules'), join(src, 'node_modules'))
    npm(['pack', '--pack-destination', work], src, { ...process.env, REAPKIT_PREBUILD_WIN32: 'skip' })
    const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'))
    const project = join(work, 'app')
    mkdirSync(project)
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }))
    npm(['install', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', join(work, tarball)], project)
    const bin = join(project, 'node_modules', '.bin', 'reapkit')
    if (!existsSync(bin)) throw new Error('bench: the installed package has no node_modules/.bin/reapkit')
    return { bin, tarball: join(work, tarball), cleanup: () => rmSync(work, { recursive: true, force: true }) }
  } catch (err) {
    rmSync(work, { recursive: true, force: true })
    throw err
  }
}
