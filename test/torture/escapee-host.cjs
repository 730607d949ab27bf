// escapee-host.cjs MODE STOP OUT KINDS: a library host that starts one escapee-server.sh and, when
// the test writes a line to its stdin, stops it on the library path, then prints the report.
//   MODE  contain: spawn({ cgroup: true }); plain: no cgroup (today's default)
//   STOP  kill: killProcessGracefully; close: closeClient (the server ignores stdin end: phase 2);
//         shutdownAll: a Supervisor's shutdownAll
// Prints {"event":"started","pid","cgroup"} after the spawn, then {"event":"report",...} after the stop.
const { join } = require('node:path')
const r = require(process.env.REAPKIT_DIST)
const [mode, stop, out, kinds] = process.argv.slice(2)
const grace = Number(process.env.TORTURE_GRACE_MS ?? 300)
const opts = { cgroup: mode === 'contain', stdio: ['pipe', 'ignore', 'ignore'] }
const args = [join(__dirname, 'escapee-server.sh'), out, kinds]
const sup = stop === 'shutdownAll' ? new r.Supervisor({ closeTimeoutMs: 200, graceMs: grace }) : null
const child = sup ? sup.spawn('sh', args, opts) : r.spawn('sh', args, opts)
const info = r.spawnedInfo(child)
console.log(JSON.stringify({ event: 'started', pid: child.pid, cgroup: info?.cgroup ?? null, uncontained: info?.cgroupUnavailable ?? null }))
let once = false
process.stdin.on('data', async () => {
  if (once) return
  once = true
  let report
  if (stop === 'kill') report = await r.killProcessGracefully(child, { graceMs: grace })
  else if (stop === 'close') report = await r.closeClient(child, { closeTimeoutMs: 200, graceMs: grace })
  else report = (await sup.shutdownAll())[0]
  const { reach, survivors, cgroup, escalated, uncertain } = report
  console.log(JSON.stringify({ event: 'report', reach, survivors, cgroup: cgroup ?? null, escalated, uncertain }))
  process.exit(0)
})
setTimeout(() => process.exit(9), 60_000).unref()
