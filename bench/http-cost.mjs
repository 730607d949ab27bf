// The cost of withHttpKeepalive per request (issue 19 item 7): a trivial tool call on the 2.x
// stateless server (test/fixtures/http-drain-server.mjs --line 2: createMcpHandler on node:http),
// with and without the drain. 10 keep-alive connections on 127.0.0.1 post `tools/call count {n: 0}`
// back to back; each slice counts the 200 responses and the server process's own CPU time (utime +
// stime from /proc/PID/stat, so a busy machine slows both sides alike and the CPU per request stays
// comparable). Figures: requests/s and server CPU per request, medians over the slices, and their
// ratios (drain / plain for requests/s, plain / drain for CPU: both read as "the drain's throughput
// relative to none", 1 = free), with the spread of the ratio from round to round.
//
// Fairness, as measured on a busy 2-core machine:
// - Several server processes per side (6; 2 in quick mode), all up for the whole measurement,
//   started in alternating order: two identical processes differ by up to 3-5% in CPU per request
//   for their whole life (what their JIT and heap happened to become), which one process per side
//   turned into a ratio that wandered by as much from run to run.
// - Rounds: each process gets one slice per round, sides interleaved, the side that goes first
//   alternating from round to round and the processes rotated (roundOrder), so a drift of the
//   machine's load falls on both sides alike; the spread reported is the interquartile range of the
//   per-round ratios.
// Called by run.mjs; also runs alone: `node bench/http-cost.mjs` (BENCH_QUICK=1 honoured;
// HTTP_COST_ROUNDS=N for another number of rounds, even).
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')
// The build measured: this checkout's, or another's (HTTP_COST_DIST=/path/to/dist/cjs/index.js) to
// compare two builds with the same bench.
const DIST = process.env.HTTP_COST_DIST || join(root, 'dist', 'cjs', 'index.js')
// 'mcp': the 2.x stateless MCP server (the figure users see); 'echo': a bare node:http server that
// echoes the body, where the drain's own cost is not hidden under the SDK's work.
const FIXTURES = {
  mcp: [join(root, 'test', 'fixtures', 'http-drain-server.mjs'), '--line', '2'],
  echo: [join(here, 'fixtures', 'http-echo-server.mjs')],
}
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

/**
 * The servers up (each the leader of its own process group): killed by the finally of the run, and
 * also at the process's exit, SIGINT or SIGTERM (a finally does not run then), alone or under run.mjs.
 */
const live = new Set()
const stopLive = () => {
  for (const child of live) stop(child)
}
const onSignal = (signal) => {
  stopLive()
  process.exit(signal === 'SIGINT' ? 130 : 143)
}

function guardLive(on) {
  const method = on ? 'on' : 'off'
  process[method]('exit', stopLive)
  for (const signal of ['SIGINT', 'SIGTERM']) process[method](signal, onSignal)
}

async function startServer(fixture, drain) {
  const child = spawn(process.execPath, [...FIXTURES[fixture], ...(drain ? [] : ['--no-drain'])], {
    env: { ...process.env, REAPKIT_DIST: DIST },
    stdio: ['ignore', 'pipe', 'ignore'],
    detached: true,
  })
  live.add(child)
  child.once('exit', () => live.delete(child))
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop(child)
      reject(new Error('bench: the server did not listen within 20 s'))
    }, 20_000)
    let out = ''
    child.stdout.on('data', (b) => {
      out += b
      const m = /listening (\d+)/.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve(Number(m[1]))
      }
    })
    child.once('exit', () => {
      clearTimeout(timer)
      reject(new Error('bench: the server exited before listening'))
    })
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
  return { process: server.index, rps: ok / (ms / 1000), cpuUsPerRequest: ok ? (cpu * 1000) / ok : null, requests: ok, failed }
}

const quartiles = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const at = (p) => s[Math.min(s.length - 1, Math.max(0, Math.round(p * (s.length - 1))))]
  return s.length === 0 ? null : [at(0.25), at(0.75)]
}

/**
 * Round r's order: the processes in pairs (one of each side), the side that goes first in each pair
 * alternating from round to round (so each side takes the even positions, first included, in every
 * other round and the positions average equal over two rounds), the pairs rotated by r (so each
 * process moves through the places).
 */
export function roundOrder(servers, r) {
  const n = servers.plain.length
  const [first, second] = r % 2 ? ['drain', 'plain'] : ['plain', 'drain']
  const order = []
  for (let j = 0; j < n; j++) order.push(servers[first][(j + r) % n], servers[second][(j + r) % n])
  return order
}

export async function httpCostFigures(quick = process.env.BENCH_QUICK === '1', fixture = 'mcp') {
  // Run to run, the verdict moved by more than the 3% it is read against with 3 processes per side
  // and 12 rounds of 1.5 s (0.95 to 0.99 on the same build): what a process's JIT and heap happen to
  // become sets its CPU per request for its whole life, so more processes per side, each loaded for
  // shorter slices in more rounds (the median of the per-round ratios is the verdict), in ~3 min.
  const perSide = quick ? 2 : 6
  // (echo: a few µs measured against ~20, not against ~800: half the rounds resolve it)
  const rounds = Number(process.env.HTTP_COST_ROUNDS) || (quick ? 4 : fixture === 'echo' ? 12 : 24) // even: each side goes first in as many rounds
  const ms = quick ? 1000 : 500
  const servers = { plain: [], drain: [] }
  guardLive(true)
  try {
    for (let i = 0; i < perSide; i++) {
      for (const side of i % 2 ? ['drain', 'plain'] : ['plain', 'drain']) servers[side].push({ side, index: i, ...(await startServer(fixture, side === 'drain')) })
    }
    for (const server of roundOrder(servers, 0)) await load(server.port, 1000) // warm-up: JIT, sockets
    const rows = { drain: [], plain: [] }
    const perRound = []
    for (let r = 0; r < rounds; r++) {
      const round = { drain: [], plain: [] }
      for (const server of roundOrder(servers, r)) round[server.side].push(await slice(server, ms))
      for (const side of ['plain', 'drain']) rows[side].push(...round[side])
      perRound.push(round)
    }
    return { fixture, ...summary(rows, perRound, { rounds, ms, perSide }) }
  } finally {
    stopLive()
    guardLive(false)
  }
}

function summary(rows, perRound, { rounds, ms, perSide }) {
  const med = (list, key) => median(list.map((r) => r[key]).filter((v) => v !== null))
  const ratios = (key, plainOverDrain) =>
    perRound.map((round) => (plainOverDrain ? med(round.plain, key) / med(round.drain, key) : med(round.drain, key) / med(round.plain, key)))
  const byProcess = (side, key) => Array.from({ length: perSide }, (_, i) => med(rows[side].filter((r) => r.process === i), key))
  return {
    rounds,
    roundMs: ms,
    processesPerSide: perSide,
    connections: CONNECTIONS,
    rows,
    rps: { plain: med(rows.plain, 'rps'), drain: med(rows.drain, 'rps') },
    cpuUs: { plain: med(rows.plain, 'cpuUsPerRequest'), drain: med(rows.drain, 'cpuUsPerRequest') },
    cpuUsByProcess: { plain: byProcess('plain', 'cpuUsPerRequest'), drain: byProcess('drain', 'cpuUsPerRequest') },
    // The verdict: the median of the per-round ratios (each round pairs the two sides under the same
    // load), not the ratio of the two sides' medians, which a drift of the load between slices moves.
    rpsRatio: median(ratios('rps', false)),
    cpuRatio: median(ratios('cpuUsPerRequest', true)),
    rpsRatioOfMedians: med(rows.drain, 'rps') / med(rows.plain, 'rps'),
    cpuRatioOfMedians: med(rows.plain, 'cpuUsPerRequest') / med(rows.drain, 'cpuUsPerRequest'),
    rpsRatioIqr: quartiles(ratios('rps', false)),
    cpuRatioIqr: quartiles(ratios('cpuUsPerRequest', true)),
    failed: rows.drain.concat(rows.plain).reduce((s, r) => s + r.failed, 0),
  }
}

export function httpCostMarkdown(d) {
  const f = (v, digits = 0) => (v === null || v === undefined ? '—' : v.toFixed(digits))
  const iqr = (q) => (q ? ` (${f(q[0], 3)}–${f(q[1], 3)})` : '')
  const each = (xs) => xs.map((x) => f(x)).join(', ')
  return `## HTTP servers: what the drain costs per request

A trivial tool call (\`count {n: 0}\`) on the 2.x stateless server, ${d.connections} keep-alive connections on
127.0.0.1 posting back to back; ${d.processesPerSide} server processes per side, all up for the whole run, each
loaded for ${d.roundMs / 1000} s per round over ${d.rounds} rounds (sides interleaved, each first in every other round);
medians over all slices of a side; the ratio is the median of the per-round ratios (each round pairs
the two sides under the same load), in brackets their interquartile range.
The server's CPU per request comes from its own /proc/PID/stat, so a busy machine slows both sides alike.

| server | requests/s | server CPU µs per request | CPU µs per request, each process |
|---|---:|---:|---|
| SDK alone | ${f(d.rps.plain)} | ${f(d.cpuUs.plain)} | ${each(d.cpuUsByProcess.plain)} |
| under \`withHttpKeepalive\` | ${f(d.rps.drain)} | ${f(d.cpuUs.drain)} | ${each(d.cpuUsByProcess.drain)} |
| ratio (the drain relative to none, per round; 1 = free) | ${f(d.rpsRatio, 3)}${iqr(d.rpsRatioIqr)} | ${f(d.cpuRatio, 3)}${iqr(d.cpuRatioIqr)} | |
${d.failed ? `\n${d.failed} requests failed (not counted).\n` : ''}${d.echo ? echoMarkdown(d.echo) : ''}`
}

/** The drain's own cost: the same load on a bare node:http server that echoes the body. */
function echoMarkdown(e) {
  const f = (v, digits = 1) => (v === null || v === undefined ? '—' : v.toFixed(digits))
  return `
The drain's own cost, without the SDK's work around it: the same load on a bare \`node:http\` server
that echoes the body (bench/fixtures/http-echo-server.mjs), ${e.processesPerSide} processes per side, ${e.rounds} rounds.

| server | requests/s | server CPU µs per request |
|---|---:|---:|
| bare \`node:http\` | ${f(e.rps.plain, 0)} | ${f(e.cpuUs.plain)} |
| under \`withHttpKeepalive\` | ${f(e.rps.drain, 0)} | ${f(e.cpuUs.drain)} |
| the drain's own CPU per request | | +${f(e.cpuUs.drain - e.cpuUs.plain)} µs (ratio ${f(e.cpuRatio, 3)}) |
`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const d = await httpCostFigures()
  d.echo = await httpCostFigures(undefined, 'echo')
  console.log(httpCostMarkdown(d))
}
