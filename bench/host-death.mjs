// The host is SIGKILLed: how long until every process of its child's tree is gone (issue 30 item 4).
// Called by run.mjs; also runs alone: `node bench/host-death.mjs [ROUNDS]` (after npm run build:ts).
// The tree (bench/fixtures/escapees.sh) has a setsid'd grandchild and a double-forked daemon that
// ignore SIGTERM. Side by side, in one run, each round interleaved:
//  - spawn({ pidNamespace: true }): the kernel ends the namespace once the helper's death signal has
//    killed it and its init;
//  - reapkit's spawn of `reapkit-supervise --isolate --close-timeout 0 --grace 100`: the supervisor
//    watches its host (pidfd) and stops the tree (no close timeout, the shortest grace: 100 ms, so mostly its reaction
//    is measured; with its defaults it gives the tree 2 s + 9 s to leave on its own);
//  - reapkit's plain spawn (group + parent-death signal): the reference, whose escapees survive.
// Runs inside `unshare --pid --fork --mount-proc` (root, or where unprivileged namespaces are allowed).
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const dist = join(here, '..', 'dist', 'cjs', 'index.js')
const reapkit = createRequire(import.meta.url)(dist)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const max = (xs) => Math.max(...xs)

export function hostDeathFigures(rounds = 20) {
  if (process.platform !== 'linux') return { skipped: 'Linux only' }
  const pidns = reapkit.capabilities().pidNamespace
  if (!pidns.available) return { skipped: `no PID namespace here: ${pidns.reason}` }
  const sides = ['pidns', ...(reapkit.capabilities().supervisor ? ['isolate'] : []), 'plain']
  const r = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', process.execPath, join(here, 'fixtures', 'host-death-ns.cjs'), String(rounds), ...sides], {
    encoding: 'utf8',
    timeout: 600_000,
    env: { ...process.env, REAPKIT_DIST: dist },
  })
  if (r.status !== 0) return { skipped: `unshare --pid --fork --mount-proc failed here (${r.status ?? r.signal}): ${r.stderr.trim().split('\n').pop()}` }
  return { rounds, sides: JSON.parse(r.stdout.trim().split('\n').pop()) }
}

const NAMES = {
  pidns: 'reapkit `spawn({ pidNamespace: true })`',
  isolate: 'reapkit `spawn` of `reapkit-supervise --isolate --close-timeout 0 --grace 100`',
  plain: 'reapkit `spawn` (group + parent-death signal only)',
}

export function hostDeathMarkdown(d) {
  if (d.skipped) return `## The host is SIGKILLed: its child's whole tree\n\n(Not measured: ${d.skipped}.)\n`
  const rows = Object.entries(d.sides).map(([side, rs]) => {
    const gone = rs.filter((x) => x.survivors === 0).map((x) => x.ms)
    const survivors = rs.reduce((s, x) => s + x.survivors, 0)
    return `| ${NAMES[side]} | ${rs.length} | ${gone.length ? median(gone).toFixed(1) : '—'} | ${gone.length ? max(gone).toFixed(1) : '—'} | ${survivors} |`
  })
  return `## The host is SIGKILLed: its child's whole tree

A Node host starts \`sh escapees.sh\` (a setsid'd grandchild and a double-forked daemon, both ignoring SIGTERM, and a plain
grandchild), then is SIGKILLed; time until every process of the tree (found by a token in its environment, checked by pid +
start time) is gone, bounded by 2 s. ${d.rounds} rounds per side, interleaved, in a PID namespace of the bench's own.

| child started with | rounds | median ms to all gone | max ms | processes left at the bound (all rounds) |
|---|---:|---:|---:|---:|
${rows.join('\n')}

With \`pidNamespace\` no code of ours runs after the SIGKILL: the kernel kills the helper (its death signal), then the
namespace's init, and with it every process in the namespace. The supervisor reacts to its host's exit (a pidfd) and
stops the tree itself, here with no close timeout and the shortest grace (100 ms, which the tree, ignoring SIGTERM, waits out); \`--isolate\` adds the namespace as its own backstop.
`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(hostDeathMarkdown(hostDeathFigures(Number(process.argv[2] ?? 20))))
}
