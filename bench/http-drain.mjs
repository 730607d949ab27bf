// The drain of MCP servers on Streamable HTTP (withHttpKeepalive), beside the same server without it
// (what the SDK's own examples do on SIGTERM: close the transports, or handler.close(), then
// process.exit(0)), in the same run, for both SDK lines, each with the same line's client.
// Called by run.mjs; also runs alone: `node bench/http-drain.mjs` (BENCH_QUICK=1 honoured).
//  - an idle server (one client connected, one call made): SIGTERM → the server process has exited;
//  - 50 calls in flight (50 clients, 1.x: a session each, one `count {n: 10, everyMs: 100}` each,
//    ~1 s), SIGTERM once every call has had a notification, then right after it one more call from
//    10 of the clients: what the clients see (calls completed with every notification, calls failed
//    and how, late calls refused), the exit code and time, and the drain's report line.
// The server is test/fixtures/http-drain-server.mjs, in a process group of its own, killed (the
// group) after every round, on errors too.
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as Transport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from '@modelcontextprotocol/client'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..')
const DIST = join(root, 'dist', 'cjs', 'index.js')
const FIXTURE = join(root, 'test', 'fixtures', 'http-drain-server.mjs')
const require = createRequire(import.meta.url)
const reapkit = require(DIST)
const hr = () => process.hrtime.bigint()
const ms = (a, b) => Number(b - a) / 1e6
const sleep = (t) => new Promise((r) => setTimeout(r, t))
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? null : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
function within(promise, msTimeout, what) {
  let timer
  return Promise.race([
    promise,
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`bench: timed out waiting for ${what}`)), msTimeout) }),
  ]).finally(() => clearTimeout(timer))
}
async function waitFor(check, msTimeout, what) {
  for (const end = Date.now() + msTimeout; !check(); await sleep(5)) {
    if (Date.now() > end) throw new Error(`bench: timed out waiting for ${what}`)
  }
}

export const GRACE_MS = 20_000
export const CALL_TIMEOUT_MS = 15_000
export const CLIENTS = 50 // one call in flight each
export const LATE = 10 // of them make one more call right after the SIGTERM
export const NOTES = 10
export const EVERY_MS = 100

const spawned = new Set()
function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL')
  } catch {}
  spawned.delete(child)
}
export function killAll() {
  for (const c of spawned) killGroup(c)
}
process.on('exit', killAll)

/** The fixture of one SDK line, listening; `exited` resolves (by pidfd) when the process has exited. */
async function startServer(line, drain) {
  const args = [FIXTURE, '--line', line, '--grace-ms', String(GRACE_MS), ...(drain ? [] : ['--no-drain'])]
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: { ...process.env, REAPKIT_DIST: DIST } })
  spawned.add(child)
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8')
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (d) => (stderr += d))
  const exitStatus = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  try {
    const port = await within(new Promise((resolve, reject) => {
      child.stdout.on('data', (d) => {
        stdout += d
        const m = /listening (\d+)/.exec(stdout)
        if (m) resolve(Number(m[1]))
      })
      exitStatus.then(({ code, signal }) => reject(new Error(`bench: the drain fixture exited (${code ?? signal}) before listening: ${stderr}`)))
    }), 20_000, `the ${line}.x drain fixture to listen`)
    const exited = reapkit.watchExit(child.pid).then(() => hr())
    return { child, port, exited, exitStatus, stderr: () => stderr }
  } catch (err) {
    killGroup(child)
    throw err
  }
}

/** An SDK client of `line`, connected; `notes` collects the logging notifications it gets (its calls' events). */
async function connect(line, port) {
  const url = new URL(`http://127.0.0.1:${port}/mcp`)
  const notes = []
  let client
  if (line === '1') {
    client = new Client1({ name: 'drain-bench-1', version: '1.0.0' })
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void notes.push(String(n.params.data)))
  } else {
    client = new Client2({ name: 'drain-bench-2', version: '1.0.0' })
    client.setNotificationHandler('notifications/message', (n) => void notes.push(String(n.params.data)))
  }
  client.onerror = () => {} // the transport's own complaints (a stream cut, a reconnection that fails): the calls tell us
  await within(client.connect(line === '1' ? new Transport1(url) : new Transport2(url)), 15_000, `a ${line}.x client to connect`)
  return { client, notes }
}

/** callTool with request options: 1.x takes (params, resultSchema, options), 2.x (params, options). */
const callTool = (line, client, params, options) => (line === '1' ? client.callTool(params, undefined, options) : client.callTool(params, options))

async function closeAll(clients) {
  await Promise.allSettled(clients.map((c) => within(Promise.resolve().then(() => c.close()), 5000, 'a client to close')))
}

/** What kind of failure a call's rejection is, in a few words. */
export function kindOf(err) {
  const text = `${err?.message ?? err} ${err?.code ?? ''} ${err?.cause?.code ?? ''} ${err?.cause?.message ?? ''}`
  if (/ECONNREFUSED/.test(text)) return 'connection refused'
  if (/-32099|\b503\b|shutting down/i.test(text)) return '503/-32099'
  if (/\b404\b|session not found/i.test(text)) return '404 session not found'
  if (/timed out|timeout/i.test(text)) return `timeout (${CALL_TIMEOUT_MS / 1000} s)`
  if (/other side closed/i.test(text)) return 'connection closed unanswered'
  if (/ECONNRESET/.test(text)) return 'ECONNRESET'
  if (/terminated/i.test(text)) return 'stream cut'
  if (/connection closed/i.test(text)) return 'client closed'
  return String(err?.message ?? err).replace(/\s+/g, ' ').slice(0, 60)
}
const REFUSED = new Set(['connection refused', '503/-32099'])

const reportOf = (stderr) => {
  const line = stderr.split('\n').find((l) => l.includes('"event":"shutdown"'))
  try {
    return line ? JSON.parse(line) : null
  } catch {
    return null
  }
}

/** SIGTERM, then the exit: ms from the signal, exit code, the report line. */
async function terminate(s, t0) {
  let exitMs = null
  try {
    exitMs = ms(t0, await within(s.exited, GRACE_MS + 10_000, 'the server to exit after SIGTERM'))
  } catch {} // null: it had not exited after the grace and 10 s more
  const status = await within(s.exitStatus, 5000, 'the exit status').catch(() => ({ code: null, signal: 'none (did not exit)' }))
  return { exitMs, code: status.code ?? status.signal, report: reportOf(s.stderr()) }
}

/** One idle round: a client connected, one call made, then SIGTERM → exited. */
async function idleRound(line, drain) {
  const s = await startServer(line, drain)
  const clients = []
  try {
    clients.push((await connect(line, s.port)).client)
    await callTool(line, clients[0], { name: 'count', arguments: { n: 1, everyMs: 0 } }, { timeout: CALL_TIMEOUT_MS })
    await sleep(20)
    const t0 = hr()
    s.child.kill('SIGTERM')
    return await terminate(s, t0)
  } finally {
    await closeAll(clients)
    killGroup(s.child)
  }
}

/**
 * One round of calls in flight: CLIENTS clients (1.x: a session each), one `count` call each (so
 * its logging notifications are told apart by client);
 * SIGTERM once every call has had one, then LATE of the clients make one more call (n: 0, no notification).
 */
async function inflightRound(line, drain) {
  const s = await startServer(line, drain)
  const clients = []
  try {
    for (let i = 0; i < CLIENTS; i++) clients.push(await connect(line, s.port))
    const expected = Array.from({ length: NOTES }, (_, i) => `line ${i + 1}`)
    let t0 = null
    const samples = {}
    const settle = (rec, promise) => promise.then(
      (r) => { rec.text = r?.content?.[0]?.text ?? null },
      (e) => {
        rec.error = kindOf(e)
        samples[rec.error] ??= String(e?.cause ? `${e.message}: ${e.cause.message ?? e.cause}` : e?.message ?? e).replace(/\s+/g, ' ').slice(0, 200)
      },
    ).finally(() => { rec.settledMs = t0 === null ? null : ms(t0, hr()) })
    const calls = clients.map(({ client, notes }) => {
      const rec = { notes, text: null, error: null, settledMs: null }
      rec.done = settle(rec, callTool(line, client, { name: 'count', arguments: { n: NOTES, everyMs: EVERY_MS } }, { timeout: CALL_TIMEOUT_MS }))
      return rec
    })
    await waitFor(() => calls.every((c) => c.notes.length >= 1 || c.error !== null || c.text !== null), 15_000, 'every call to be under way')
    const beforeSignal = calls.filter((c) => c.notes.length === 0 || c.error !== null || c.text !== null).length // not in flight at the SIGTERM (should be 0)
    t0 = hr()
    s.child.kill('SIGTERM')
    const late = clients.slice(0, LATE).map(({ client }) => {
      const rec = { text: null, error: null, settledMs: null }
      rec.done = settle(rec, callTool(line, client, { name: 'count', arguments: { n: 0, everyMs: 0 } }, { timeout: CALL_TIMEOUT_MS }))
      return rec
    })
    const exit = await terminate(s, t0)
    const waitMs = CALL_TIMEOUT_MS + 10_000
    await within(Promise.all([...calls, ...late].map((c) => c.done)), waitMs, 'every call to settle at its client').catch(() => {})
    for (const c of [...calls, ...late]) if (c.settledMs === null && c.error === null && c.text === null) c.error = `no answer, no error in ${waitMs / 1000} s`
    const full = (c) => c.text === `counted ${NOTES}` && c.notes.length === NOTES && c.notes.every((n, i) => n === expected[i])
    const tally = (recs) => {
      const out = {}
      for (const r of recs) if (r.error !== null) out[r.error] = (out[r.error] ?? 0) + 1
      return out
    }
    const settled = calls.filter((c) => c.settledMs !== null).map((c) => c.settledMs)
    return {
      ...exit,
      beforeSignal,
      completed: calls.filter(full).length,
      incomplete: calls.filter((c) => c.error === null && !full(c)).map((c) => ({ text: c.text, notes: c.notes.length })),
      failed: tally(calls),
      lastSettledMs: settled.length === calls.length ? Math.max(...settled) : null,
      late: {
        refused: late.filter((c) => REFUSED.has(c.error)).length,
        served: late.filter((c) => c.error === null && c.text !== null).length,
        kinds: tally(late),
      },
      errorSamples: { ...samples },
    }
  } finally {
    await closeAll(clients.map((c) => c.client))
    killGroup(s.child)
  }
}

/** Every configuration (SDK line × {drain, SDK alone}) in turn: its idle rounds, then its in-flight rounds. */
export async function httpDrainFigures(quick = process.env.BENCH_QUICK === '1') {
  const idleRounds = quick ? 3 : 10
  const inflightRounds = quick ? 1 : 3
  const rows = []
  try {
    for (const line of ['1', '2']) {
      for (const drain of [true, false]) {
        const idle = []
        for (let i = 0; i < idleRounds; i++) idle.push(await idleRound(line, drain))
        const inflight = []
        for (let i = 0; i < inflightRounds; i++) inflight.push(await inflightRound(line, drain))
        rows.push({ line, drain, idle, inflight })
      }
    }
  } finally {
    killAll()
  }
  const version = (name) => {
    try {
      return JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version
    } catch {
      return 'not installed'
    }
  }
  return {
    graceMs: GRACE_MS,
    callTimeoutMs: CALL_TIMEOUT_MS,
    clients: CLIENTS,
    late: LATE,
    notes: NOTES,
    everyMs: EVERY_MS,
    versions: { sdk1: version('@modelcontextprotocol/sdk'), client2: version('@modelcontextprotocol/client'), server2: version('@modelcontextprotocol/server') },
    rows,
  }
}

const f = (v) => (v === null || v === undefined ? '—' : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2))
const sumKinds = (tallies) => {
  const out = {}
  for (const t of tallies) for (const [k, n] of Object.entries(t)) out[k] = (out[k] ?? 0) + n
  return out
}
const kinds = (tally) => Object.entries(tally).map(([k, n]) => `${k}: ${n}`).join(', ')
const codes = (xs) => {
  const counts = {}
  for (const x of xs) counts[x.code] = (counts[x.code] ?? 0) + 1
  const keys = Object.keys(counts)
  return keys.map((c) => (keys.length === 1 ? c : `${c} ×${counts[c]}`)).join(', ')
}
/** median / max of the rounds' SIGTERM → exit, and how many did not exit at all. */
const exitCell = (rounds) => {
  const done = rounds.map((r) => r.exitMs).filter((v) => v !== null)
  const hung = rounds.length - done.length
  return `${done.length ? `${f(median(done))} / ${f(Math.max(...done))}` : '—'}${hung ? ` (${hung} not exited after ${GRACE_MS / 1000 + 10} s)` : ''}`
}

export function httpDrainMarkdown(d) {
  const name = (r) => (r.drain ? 'drain (`withHttpKeepalive`)' : 'SDK alone (close, `process.exit(0)`)')
  const lineName = (l) => (l === '1' ? `1.x (sdk ${d.versions.sdk1})` : `2.x (${d.versions.client2} / ${d.versions.server2})`)
  const inflightRow = (r) => {
    const rs = r.inflight
    const n = rs.length
    const completed = rs.reduce((s, x) => s + x.completed, 0)
    const incomplete = rs.reduce((s, x) => s + x.incomplete.length, 0)
    const failed = sumKinds(rs.map((x) => x.failed))
    const nFailed = Object.values(failed).reduce((s, v) => s + v, 0)
    const notInFlight = rs.reduce((s, x) => s + x.beforeSignal, 0)
    const lateKinds = sumKinds(rs.map((x) => x.late.kinds))
    const served = rs.reduce((s, x) => s + x.late.served, 0)
    const refused = rs.reduce((s, x) => s + x.late.refused, 0)
    const reports = rs.map((x) => x.report)
    const reportCell = reports.every((x) => x === null) ? '— (none)' : reports.map((x) => (x ? `${x.drained} / ${x.abandoned} / ${x.refused}` : 'none')).join('; ')
    const settled = rs.map((x) => x.lastSettledMs)
    return [
      lineName(r.line),
      name(r),
      n,
      exitCell(rs),
      codes(rs),
      `${completed} / ${d.clients * n}${incomplete ? ` (+${incomplete} answered without every notification)` : ''}${notInFlight ? ` (${notInFlight} not in flight at the SIGTERM)` : ''}`,
      `${nFailed}${nFailed ? ` (${kinds(failed)})` : ''}`,
      `${refused} / ${d.late * n}${Object.keys(lateKinds).length ? ` (${kinds(lateKinds)})` : ''}${served ? `; ${served} served` : ''}`,
      reportCell,
      settled.every((v) => v !== null) ? f(median(settled)) : '—',
    ].join(' | ')
  }
  return `## HTTP servers: the drain (\`withHttpKeepalive\`)

The fixture \`test/fixtures/http-drain-server.mjs\` on 127.0.0.1, for each SDK line with the same line's
client: 1.x (\`StreamableHTTPServerTransport\`, a session per client, behind Express) and 2.x
(\`@modelcontextprotocol/client\` / \`server\`; \`createMcpHandler\`, stateless, on \`node:http\`).
"drain": under \`withHttpKeepalive\` (grace ${d.graceMs / 1000} s). "SDK alone": the same server doing on SIGTERM
what the SDK's own examples do: close the transports (1.x) or \`handler.close()\` (2.x), then
\`process.exit(0)\`. SIGTERM → exit is seen here by pidfd.

An idle server (one client connected, one call made and answered), SIGTERM → the process exited:

| SDK line | server | n | median ms | max ms | exit code |
|---|---|---:|---:|---:|---|
${d.rows.map((r) => {
  const xs = r.idle.map((x) => x.exitMs).filter((v) => v !== null)
  const hung = r.idle.length - xs.length
  return `| ${lineName(r.line)} | ${name(r)} | ${r.idle.length} | ${f(median(xs))} | ${xs.length ? f(Math.max(...xs)) : '—'}${hung ? ` (${hung} not exited)` : ''} | ${codes(r.idle)} |`
}).join('\n')}

${d.clients} calls in flight: ${d.clients} clients (1.x: a session each), each with one call \`count {n: ${d.notes}, everyMs: ${d.everyMs}}\`
(about ${(d.notes * d.everyMs) / 1000} s); the SIGTERM once every call has had its first notification, then right after it
${d.late} of the clients make one more call (the late calls). Counts are sums over the rounds; the exit
time is the median / max of the rounds. "Completed": the result \`counted ${d.notes}\` and all ${d.notes} of the
call's logging notifications, in order. "Failed": the call rejected at its client (the kinds in
brackets; a timeout is the client's ${d.callTimeoutMs / 1000} s per-call timeout: no answer came). "Refused": the late
call got connection refused, or 503 with -32099; the other kinds a late call can meet are a
connection reset (ECONNRESET) or closed with no answer, and "served": it reached the server before
the drain began. "Report": the drain's report line per round. "Last settled": ms from the SIGTERM
until the last in-flight call had settled at its client (answered or failed), median of the rounds.

| SDK line | server | rounds | SIGTERM → exit ms, median / max | exit code | in flight: completed | in flight: failed | late calls refused | report: drained / abandoned / refused | last settled ms |
|---|---|---:|---:|---|---:|---|---|---|---:|
${d.rows.map((r) => `| ${inflightRow(r)} |`).join('\n')}
`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { killAll(); process.exit(130) })
  const quick = process.env.BENCH_QUICK === '1'
  const started = Date.now()
  const r = await httpDrainFigures(quick)
  console.log(httpDrainMarkdown(r))
  console.log(`(${((Date.now() - started) / 1000).toFixed(1)} s)`)
  if (process.env.BENCH_JSON) console.log(JSON.stringify(r, null, 1))
  process.exit(0)
}
