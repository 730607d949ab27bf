// Run under Node >= 22 by bench/peers.mjs (execa 10 needs it): the tree-stop figure for execa 10's
// `killDescendants`, the strongest configuration of that peer. The same tree as reaping.mjs
// (sh -> sh -> sleep, one group); `subprocess.kill()` with killDescendants sends SIGTERM to the
// group (execa spawns it detached), and forceKillAfterDelay (5 s) would follow with SIGKILL. Time is
// to the execa promise settling; survivors are the group's live members at that moment. Prints one
// JSON line: { rows: [{ ms, survivors }] }.
// Env: REAPKIT_BENCH_PEERS (where execa 10 is installed), REAPKIT_DIST (reapkit's CJS entry, for
// listing and pinning the group's members: its addon is Node-API, so Node 22 loads the same build).
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const require = createRequire(import.meta.url)
const reapkit = require(process.env.REAPKIT_DIST)
const { execa } = await import(pathToFileURL(join(process.env.REAPKIT_BENCH_PEERS, 'node_modules', 'execa', 'index.js')).href)
const samples = Number(process.argv[2] ?? 5)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const now = () => performance.now()

async function waitMembers(pgid, n) {
  const deadline = now() + 10_000
  while (reapkit.groupMembers(pgid).length < n) {
    if (now() > deadline) throw new Error(`execa10-stop: group ${pgid} did not reach ${n} members`)
    await sleep(5)
  }
}

/** Pinned by pidfd before anything is signalled: the final SIGKILL can never hit a recycled pid. */
function pin(pgid) {
  const handles = []
  for (const pid of reapkit.groupMembers(pgid)) {
    try {
      handles.push(reapkit.openProcess(pid))
    } catch {}
  }
  return handles
}

async function finish(handles) {
  for (const h of handles) {
    try {
      h.signal('SIGKILL')
    } catch {}
  }
  for (const h of handles) {
    await Promise.race([h.exited, sleep(5000)])
    h.close()
  }
}

const rows = []
for (let i = 0; i < samples; i++) {
  const sub = execa('sh', ['-c', "sh -c 'sleep 1000; :' & wait"], { killDescendants: true, forceKillAfterDelay: 5000, stdio: 'ignore' })
  const settled = sub.then(() => now(), () => now())
  await waitMembers(sub.pid, 3)
  const handles = pin(sub.pid)
  const t0 = now()
  sub.kill()
  const done = await settled
  const survivors = reapkit.groupMembers(sub.pid).length
  await finish(handles)
  rows.push({ ms: done - t0, survivors })
}
process.stdout.write(JSON.stringify({ node: process.version, execa: require(join(process.env.REAPKIT_BENCH_PEERS, 'node_modules', 'execa', 'package.json')).version, rows }) + '\n')
