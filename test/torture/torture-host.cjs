// torture-host.cjs MODE PLAN: a host that starts one torture tree (tree-node.sh) and is then
// stopped by the test at a random moment: SIGKILL, SIGTERM or the end of its stdin.
//   cli      starts the tree as `reapkit -- sh tree-node.sh PLAN 0`, and on SIGTERM or stdin end
//            simply exits, as a careless host does: the wrapper must clean up after it.
//   library  starts it with a reapkit Supervisor, and on SIGTERM or stdin end runs shutdownAll,
//            then exits: the bounded graceful stop of the library.
// Prints {"event":"started","pid":CHILD} once the child is spawned.
const { spawn } = require('node:child_process')
const { join } = require('node:path')
const r = require(process.env.REAPKIT_DIST)

const [mode, plan] = process.argv.slice(2)
const node = join(__dirname, 'tree-node.sh')
const grace = Number(process.env.TORTURE_GRACE_MS ?? 300)
let stop
if (mode === 'cli') {
  const bin = join(__dirname, '..', '..', 'bin', 'reapkit')
  const child = spawn(bin, ['--grace', String(grace), '--close-timeout', '200', '--', 'sh', node, plan, '0'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  console.log(JSON.stringify({ event: 'started', pid: child.pid }))
  stop = () => process.exit(0)
} else {
  const sup = new r.Supervisor({ closeTimeoutMs: 250, graceMs: grace })
  const child = sup.spawn('sh', [node, plan, '0'], { stdio: ['pipe', 'pipe', 'inherit'] })
  console.log(JSON.stringify({ event: 'started', pid: child.pid }))
  let stopping = false
  stop = async () => {
    if (stopping) return
    stopping = true
    await sup.shutdownAll()
    process.exit(0)
  }
}
process.on('SIGTERM', () => stop())
process.stdin.on('end', () => stop())
process.stdin.resume()
setTimeout(() => process.exit(9), 60_000).unref()
