// Installing the packed tarball as a dependent's `npm install` does (issue 29): how long it takes
// where a prebuild fits, where none fits and a compiler is there (node-gyp builds the addon), and
// where none fits and there is no compiler (the install step leaves reapkit on its fallbacks); and
// what it weighs: the tarball, and the package as installed (every target's prebuilds inside).
//
// Runs alone too: `node bench/install.mjs TARBALL` (after `npm pack`). The tarball without a
// fitting prebuild is the same one with this platform's prebuilds taken out.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const npmCli = [process.env.npm_execpath, join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js')].find((p) => p && p.endsWith('.js') && existsSync(p))

/** Bytes under `dir`, files only (what `du --apparent-size -b` would count). */
function bytesUnder(dir) {
  let total = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name)
    if (entry.isDirectory()) total += bytesUnder(p)
    else if (entry.isFile()) total += statSync(p).size
  }
  return total
}

/** `tarball` with this platform's prebuilds taken out (prebuilds/<platform>-<arch>*), as a new tarball in `work`. */
function withoutOwnPrebuilds(tarball, work) {
  const dir = mkdtempSync(join(work, 'unpacked-'))
  execFileSync('tar', ['-xzf', tarball, '-C', dir])
  const pre = join(dir, 'package', 'prebuilds')
  const mine = `${process.platform}-${process.arch}`
  if (existsSync(pre)) for (const d of readdirSync(pre)) if (d === mine || d.startsWith(`${mine}-`) || d.startsWith(`${mine}+`)) rmSync(join(pre, d), { recursive: true, force: true })
  const out = join(work, 'reapkit-no-own-prebuild.tgz')
  execFileSync('tar', ['-czf', out, '-C', dir, 'package'])
  rmSync(dir, { recursive: true, force: true })
  return out
}

/** A PATH with only node and sh: what a slim image without build tools has. */
function bareBin(work) {
  const bin = join(work, 'bare-bin')
  mkdirSync(bin, { recursive: true })
  for (const [name, target] of [['node', process.execPath], ['sh', '/bin/sh']]) if (!existsSync(join(bin, name))) symlinkSync(target, join(bin, name))
  return bin
}

/** One `npm install TARBALL` into a fresh project; its wall time in ms (throws if npm fails). */
function installOnce(tarball, work, env) {
  const project = mkdtempSync(join(work, 'app-'))
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }))
  const started = process.hrtime.bigint()
  const r = spawnSync(process.execPath, [npmCli, 'install', '--prefer-offline', '--no-audit', '--no-fund', tarball], { cwd: project, env, encoding: 'utf8', timeout: 600_000 })
  const ms = Number(process.hrtime.bigint() - started) / 1e6
  if (r.status !== 0) throw new Error(`bench: npm install failed (${r.status}):\n${r.stdout}\n${r.stderr}`)
  return { ms, project }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]

/**
 * The install figures for `tarball`: `runs` installs per case (median), interleaved so a busy
 * moment falls on every case alike. Removes everything it made.
 */
export function installFigures(tarball, { runs = 3 } = {}) {
  if (!npmCli) throw new Error('bench: cannot find npm-cli.js')
  const work = mkdtempSync(join(tmpdir(), 'reapkit-bench-install-'))
  try {
    const unprebuilt = withoutOwnPrebuilds(tarball, work)
    const bare = { ...process.env, PATH: bareBin(work) }
    const cases = {
      prebuild: () => installOnce(tarball, work, process.env),
      compile: () => installOnce(unprebuilt, work, process.env),
      noCompiler: () => installOnce(unprebuilt, work, bare),
    }
    const times = { prebuild: [], compile: [], noCompiler: [] }
    let installedBytes = 0
    // One untimed install first fills npm's cache with the dependencies, for every case alike.
    installOnce(tarball, work, process.env)
    for (let i = 0; i < runs; i++) {
      for (const [name, run] of Object.entries(cases)) {
        const { ms, project } = run()
        times[name].push(ms)
        if (name === 'prebuild') installedBytes = bytesUnder(join(project, 'node_modules', 'reapkit'))
        rmSync(project, { recursive: true, force: true })
      }
    }
    return {
      runs,
      tarballBytes: statSync(tarball).size,
      installedBytes,
      ms: Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)])),
      all: times,
    }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const tarball = process.argv[2]
  if (!tarball) throw new Error('usage: node bench/install.mjs TARBALL')
  console.log(JSON.stringify(installFigures(tarball, { runs: Number(process.env.INSTALL_RUNS ?? 3) }), null, 1))
}
