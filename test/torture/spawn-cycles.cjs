// spawn-cycles.cjs N: N full lifecycles through reapkit, 16 at a time: spawn (exec helper, own
// group, kernel death signal), then killProcessGracefully (SIGTERM to the group, wait by pidfd
// event, confirm). Measures open fds, heap and RSS after a warm-up, halfway and at the end (after
// a GC), and prints them as one JSON line. Run with --expose-gc.
const { readdirSync } = require('node:fs')
const r = require(process.env.REAPKIT_DIST)

const N = Number(process.argv[2] ?? 10_000)
const CONCURRENCY = 16
const fds = () => readdirSync('/proc/self/fd').length
async function cycles(n) {
  let i = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (i++ < n) {
        const child = r.spawn('sleep', ['1000'], { stdio: 'ignore' })
        const result = await r.killProcessGracefully(child, { graceMs: 5000 })
        if (result.survivors?.length) throw new Error(`survivors: ${JSON.stringify(result)}`)
      }
    }),
  )
}
async function settle() {
  await new Promise((res) => setTimeout(res, 100))
  global.gc()
  return { fds: fds(), heapMB: process.memoryUsage().heapUsed / 1e6, rssMB: process.memoryUsage().rss / 1e6 }
}
;(async () => {
  await cycles(500) // warm-up: JIT, allocator arenas, libuv's signal pipe
  const before = await settle()
  const t0 = Date.now()
  await cycles(Math.floor(N / 2))
  const half = await settle()
  await cycles(N - Math.floor(N / 2))
  const after = await settle()
  console.log(JSON.stringify({ cycles: N, ms: Date.now() - t0, before, half, after }))
  process.exit(0)
})().catch((err) => {
  console.error(err)
  process.exit(1)
})
