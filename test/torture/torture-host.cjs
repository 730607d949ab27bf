// torture-host.cjs MODE PLAN [STOP_MS [STOP_HOW]]: a host that starts one torture tree (tree-node.sh) and is then
// stopped by the test at a random moment: SIGKILL, SIGTERM or the end of its stdin.
//   cli      starts the tree as `reapkit -- sh tree-node.sh PLAN 0`, and on SIGTERM or stdin end
//            simply exits, as a careless host does: the wrapper must clean up after it.
//   library  starts it with a reapkit Supervisor, and on SIGTERM or stdin end runs shutdownAll,
//            then exits: the bounded graceful stop of the library.
//   STOP_MS  library mode only: the host stops on its own this many ms after spawn() returns (0:
//            synchronously, right after it returns), by STOP_HOW: shutdownAll (the default), or
//            kill (killProcessGracefully on the child, no close phase first).
// Prints {"event":"started","pid":CHILD} once the child is spawned.
const { spawn } = require('node:child_process')
const { join } = require('node:path')
const r = require(process.env.REAPKIT_DIST)

const [mode, plan, stopMs, stopHow = 'shutdownAll'] = process.argv.slice(2)
const node = join(__dirname, 'tree-node.sh')
const grace = Number(process.env.TORTURE_GRACE_MS ?? 300)
let stop = () => {}
// Before the spawn: a SIGTERM sent as soon as "started" is read must find the handler in place
// (without it, the kernel's default action would end the host before it could stop anything). It
// runs from the event loop, once this script has set `stop` below.
process.on('SIGTERM', () => stop())
process.stdin.on('end', () => stop())
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
  const stopSelf = stopHow === 'kill'
    ? () => r.killProcessGracefully(child, { graceMs: grace }).then(() => process.exit(0))
    : stop
  if (stopMs === '0') stopSelf()
  else if (stopMs !== undefined) setTimeout(stopSelf, Number(stopMs))
}
process.stdin.resume()
setTimeout(() => process.exit(9), 60_000).unref()
