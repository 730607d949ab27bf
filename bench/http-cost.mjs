// The cost of withHttpKeepalive per request (issue 19 item 7): a trivial tool call on the 2.x
// stateless server (test/fixtures/http-drain-server.mjs --line 2: createMcpHandler on node:http),
// with and without the drain, both running for the whole measurement and loaded in turns (slices
// of a fixed time, alternating order). 10 keep-alive connections on 127.0.0.1 post
// `tools/call count {n: 0}` back to back; each slice counts the
// 200 responses and the server process's own CPU time (utime + stime from /proc/PID/stat, so a busy
// machine slows both sides alike and the CPU per request stays comparable). Figures: requests/s and
// server CPU per request, medians over the slices, and their ratios (drain / plain for requests/s,
// plain / drain for CPU: both read as "the drain's throughput relative to none", 1 = free).
// Called by run.mjs; also runs alone: `node bench/http-cost.mjs` (BENCH_QUICK=1 honoured).
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')
const DIST = join(root, 'dist', 'cjs', 'index.js')
const FIXTURE = join(root, 'test', 'fixtures', 'http-drain-server.mjs')
const CONNECTIONS = 10
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? null : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const TICK_MS = 1000 / 100 // USER_HZ is 100 on Linux

function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS
}

async function startServer(drain) {
  const child = spawn(process.execPath, [FIXTURE, '--line', '2', ...(drain ? [] : ['--no-drain'])], {
    env: { ...process.env, REAPKIT_DIST: DIST },
    stdio: ['ignore', 'pipe', 'ignore'],
    detached: true,
  })
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('bench: the server did not listen within 20 s')), 20_000)
    let out = ''
    child.stdout.on('data', (b) => {
      out += b
      const m = /listening (\d+)/.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve(Number(m[1]))
      }
    })
    child.once('exit', () => reject(new Error('bench: the server exited before listening')))
  })
  return { child, port }
}

function stop(child) {
  try {
    process.kill(-child.pid, 'SIGKILL')
  } catch {}
}

const BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'count', arguments: { n: 0, everyMs: 0 } } })
const HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-06-18',
  'mcp-method': 'tools/call',
}

/** CONNECTIONS loops posting back to back for `ms`; the 200s and the failures. */
async function load(port, ms) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS })
  let ok = 0
  let failed = 0
  const end = Date.now() + ms
  const one = () =>
    new Promise((resolve) => {
      const req = http.request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', agent, headers: HEADERS, timeout: 10_000 }, (res) => {
        res.resume()
        res.on('end', () => {
          if (res.statusCode === 200) ok++
          else failed++
          resolve()
        })
      })
      req.on('timeout', () => req.destroy())
      req.on('error', () => {
        failed++
        resolve()
      })
      req.end(BODY)
    })
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    while (Date.now() < end) await one()
  }))
  agent.destroy()
  return { ok, failed }
}

/** One slice of load on one server: its requests/s and its own CPU per request over the slice. */
async function slice(server, ms) {
  const c0 = cpuMs(server.child.pid)
  const { ok, failed } = await load(server.port, ms)
  const cpu = cpuMs(server.child.pid) - c0
  return { rps: ok / (ms / 1000), cpuUsPerRequest: ok ? (cpu * 1000) / ok : null, requests: ok, failed }
}

export async function httpCostFigures(quick = process.env.BENCH_QUICK === '1') {
  const slices = quick ? 4 : 24
  const ms = quick ? 1000 : 2000
  const rows = { drain: [], plain: [] }
  // Both servers run for the whole measurement and take turns, slice by slice, in alternating order:
  // a drift of the machine's load, or a start-up's JIT state, falls on both sides alike (separate
  // start-ups per round made the ratio wander by several percent from one run to the next).
  const servers = { plain: await startServer(false), drain: await startServer(true) }
  try {
    for (const side of ['plain', 'drain']) await load(servers[side].port, quick ? 500 : 2000) // warm-up: JIT, sockets
    for (let i = 0; i < slices; i++) {
      for (const side of i % 2 ? ['drain', 'plain'] : ['plain', 'drain']) rows[side].push(await slice(servers[side], ms))
    }
  } finally {
    for (const server of Object.values(servers)) stop(server.child)
  }
  const m = (side, key) => median(rows[side].map((r) => r[key]).filter((v) => v !== null))
  return {
    rounds: slices,
    roundMs: ms,
    connections: CONNECTIONS,
    rows,
    rps: { plain: m('plain', 'rps'), drain: m('drain', 'rps') },
    cpuUs: { plain: m('plain', 'cpuUsPerRequest'), drain: m('drain', 'cpuUsPerRequest') },
    rpsRatio: m('drain', 'rps') / m('plain', 'rps'),
    cpuRatio: m('plain', 'cpuUsPerRequest') / m('drain', 'cpuUsPerRequest'),
    failed: rows.drain.concat(rows.plain).reduce((s, r) => s + r.failed, 0),
  }
}

export function httpCostMarkdown(d) {
  const f = (v, digits = 0) => (v === null || v === undefined ? '—' : v.toFixed(digits))
  return `## HTTP servers: what the drain costs per request

A trivial tool call (\`count {n: 0}\`) on the 2.x stateless server, ${d.connections} keep-alive connections on
127.0.0.1 posting back to back; both servers up for the whole run, taking turns in ${d.rounds} slices of ${d.roundMs / 1000} s each
(alternating order); medians over the slices.
The server's CPU per request comes from its own /proc/PID/stat, so a busy machine slows both sides alike.

| server | requests/s | server CPU µs per request |
|---|---:|---:|
| SDK alone | ${f(d.rps.plain)} | ${f(d.cpuUs.plain)} |
| under \`withHttpKeepalive\` | ${f(d.rps.drain)} | ${f(d.cpuUs.drain)} |
| ratio (the drain relative to none; 1 = free) | ${f(d.rpsRatio, 3)} | ${f(d.cpuRatio, 3)} |
${d.failed ? `\n${d.failed} requests failed (not counted).\n` : ''}`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const d = await httpCostFigures()
  console.log(httpCostMarkdown(d))
}
