// `npm pack` of this checkout, the release tarball as prepack makes it, from a copy of the sources:
// prepack's build never replaces a file that a running test or bench has loaded from the checkout.
// prebuilds/ is copied with them and the prebuild cache is the checkout's: scripts/prebuild/build.mjs
// keeps a target whose inputs and outputs match its last build, and builds it otherwise (all four
// Linux targets on a fresh clone). What this machine cannot build is left out, by name: the macOS
// prebuilds (macOS runners make them) and, unless asked, Windows (test:win32 packs and checks it).
// One implementation for test/package.test.ts, the bench and scripts/install-fallback-bullseye.mjs.
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, readdirSync, symlinkSync } from 'node:fs'
import { join, relative } from 'node:path'

const SKIP = new Set(['node_modules', 'build', 'build-cmake', 'build-sanitize', 'build-win32', 'dist', '.git', '.cache'])

/** Packs `root` into `work` (a folder of the caller's); returns the tarball's path. */
export function packFromCopy(root, work, { npm = (args, cwd, env) => execFileSync('npm', args, { cwd, env, stdio: ['ignore', 'ignore', 'inherit'] }) } = {}) {
  const src = join(work, 'src')
  cpSync(root, src, {
    recursive: true,
    filter: (from) => {
      const rel = relative(root, from)
      if (rel === '') return true
      const top = rel.split('/')[0]
      return !SKIP.has(top) && !rel.endsWith('.tgz') && !rel.startsWith('bench/results')
    },
  })
  symlinkSync(join(root, 'node_modules'), join(src, 'node_modules'))
  const env = {
    ...process.env,
    REAPKIT_PREBUILD_WIN32: process.env.REAPKIT_PREBUILD_WIN32 ?? 'skip',
    REAPKIT_PREBUILD_ALLOW_MISSING: process.env.REAPKIT_PREBUILD_ALLOW_MISSING ?? 'darwin-x64,darwin-arm64',
    REAPKIT_PREBUILD_CACHE: join(root, '.cache', 'prebuild'),
  }
  if (!env.npm_config_nodedir && existsSync('/usr/include/node/node_api.h')) env.npm_config_nodedir = '/usr'
  npm(['pack', '--pack-destination', work], src, env)
  const tarball = readdirSync(work).find((f) => f.endsWith('.tgz'))
  if (!tarball) throw new Error(`npm pack left no tarball in ${work}`)
  return join(work, tarball)
}
