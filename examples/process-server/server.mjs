#!/usr/bin/env node
// An MCP server that runs commands for its clients, and never leaves one behind. It speaks stdio (the
// default: one client, its host) or Streamable HTTP (--http <port>: several clients, each in
// sessions of its own).
//
// Tools (tools.mjs):
//   run_command        runs a command under reapkit's native supervisor (its own process group, a
//                      subreaper that adopts what daemonizes, the kernel's death signal) tied to the
//                      request's id, streams each output line while it runs (a logging notification,
//                      notifications/message; and notifications/progress when the client sent a
//                      progress token) and answers with its exit status and output once it ends;
//                      cancelling the request (notifications/cancelled) stops the process gracefully;
//                      optional timeoutMs (default 60 s) and tags
//   list_processes     what this server started for the caller, with status, exit code or signal,
//                      duration (of ended ones) and tags (`tag` filters)
//   terminate_process  stops one of them by pid or request id (nothing it did not start for the caller)
//   get_output         one of them's stdout or stderr, by pid or request id, while it runs and after it
//                      ended (what its Supervisor keeps: the newest --output-bytes of each process,
//                      both streams together, all within --output-total-bytes, ended processes'
//                      dropped first), from a byte offset, as UTF-8 text in whole characters or as
//                      base64 (the exact bytes)
//
// run_command runs programs AS THIS SERVER'S USER: whoever can call it can do what that user can
// (including `kill`, which terminate_process would refuse). So it runs only the commands named with
// --allow, unless started with --allow-any (the example mode of `npm run example`). An allowed
// command is as powerful as its arguments: a shell or an interpreter (sh, node, python) allows
// everything, and so do git (`-c alias.x=!cmd`), find (-exec), env, xargs, awk and tar: allow such
// ones knowingly. Commands get a minimal environment (PATH, HOME, LANG, and what --pass-env names),
// never this server's own, so nothing is inherited by accident; but a command running as the same
// user can still read what that user can, /proc/<this server>/environ included: keep secrets out
// of this server's environment, or run it as a user of its own.
//
// HTTP mode (http.mjs) and its security model: it serves /mcp on 127.0.0.1 unless --host says
// otherwise. Every request needs `Authorization: Bearer <token>` (401 otherwise), a token from
// --token or PROCESS_SERVER_TOKEN, or else one generated at start and printed once on stderr. A
// token on the command line is visible to every local user (ps, /proc/<pid>/cmdline): prefer the
// environment or the generated one. A browser's Origin must be on the allow-list, and while bound to
// loopback the Host header must be a loopback name (403: DNS rebinding); bodies over --max-body-bytes are 413;
// none of these refusals starts anything. A session belongs to the token that created it (another
// token gets 404 there), and a process to the session that started it: another session, of the
// same client or not, can neither see, stop nor cancel it. A session that ends stops its processes:
// DELETE, or --session-idle-ms without a request or an open stream (the client is gone). A call
// whose response stream the client closes before the result is cancelled, its process stopped.
// Bound to another address (--host 0.0.0.0), the Host check is off and the token is the only guard,
// sent in clear: put TLS in front (a reverse proxy), and use --allow rather than --allow-any.
//
// On SIGTERM, SIGINT, SIGHUP (stdio mode: also stdin end or its host's death) it drains and leaves
// one report line on stderr. In stdio mode every process it started is stopped at once, so the calls
// in flight end (with the signal that stopped them) and are answered within the grace (GRACE_MS,
// default 8000). In HTTP mode (reapkit's withHttpKeepalive) new requests get 503 (-32099) and
// /readyz 503, the calls in flight run on until they end or the grace ends (GRACE_MS, default
// 20000): those still running then get a -32099 error as their last event, their processes are
// stopped, and it exits 1 (0 when nothing was abandoned). A process that daemonizes (setsid, double
// fork) is adopted by its supervisor and stopped with it; one whose command kills that supervisor
// itself escapes it (the supervisor's --isolate, a PID namespace, would close that too; it is not
// used here because it needs user namespaces or root).
//
// Options:
//   --allow <cmd>       a command run_command may run, as the client names it (repeatable, or
//                       comma-separated). Default: none.
//   --allow-any         run any command (the example mode: only on a machine and as a user you trust
//                       the client with)
//   --pass-env <NAME>   pass this variable of the server's environment to commands (repeatable)
//   --state-file <path> record what it runs there (Supervisor stateFile): started again after a
//                       crash, it first stops what the crashed incarnation left running, so a
//                       restart never doubles its children. One file per server.
//   --http <port>       serve Streamable HTTP on this port (0: a free one) instead of stdio; it
//                       prints `process-server: listening on http://HOST:PORT/mcp` on stderr
//   --host <address>    the address to bind in HTTP mode. Default: 127.0.0.1
//   --token <token>     a bearer token a client may use (repeatable: one per client); also
//                       PROCESS_SERVER_TOKEN. Default: one generated (32 random bytes), printed
//   --allow-origin <o>  an Origin a browser client may come from, as scheme://host[:port]
//                       (repeatable; replaces the default). Default: http(s) on localhost,
//                       127.0.0.1 or [::1], any port. A request without Origin (not a browser) passes
//   --max-body-bytes <n> the largest request body. Default: 1048576 (1 MiB)
//   --session-idle-ms <n> close a session after this long with no request and no open stream.
//                       Default: 600000 (10 minutes)
//   --output-bytes <n>  the newest n bytes of each process's output are kept (stdout and stderr
//                       together), for get_output and run_command's result. Default: 65536
//   --output-total-bytes <n> the memory all kept output may take (its buffers and a fixed overhead
//                       per process): when it is full, ended processes' output goes first, the
//                       earliest ended first. Default: 16777216 (16 MiB)
//   --control-socket <path> open the Supervisor's control socket there (owner-only; put it beside
//                       the state file): `reapkit ps|logs|restart|stop|top --socket <path>` then
//                       show and steer what this server runs (docs/operators.md)
//   --container <image> container mode (container.mjs): every run_command runs in a fresh container,
//                       `<engine> run --rm --network none --memory 512m IMAGE command args...`,
//                       instead of under the native supervisor. Cancel, terminate_process, the
//                       timeout, session end and the drain stop the container through the engine
//                       and confirm it gone before the call is answered; list_processes shows its
//                       id; --state-file records the runs, so a restart stops a crashed run's
//                       containers. The command gets the image's environment plus --pass-env's.
//   --engine <name>     docker or podman (default docker), resolved on PATH
//   --container-network <name>  Default: none
//   --container-memory <size>   Default: 512m
//   --container-label <key=value> a label on every container (repeatable)
//   Liveness and readiness: GET /livez and /readyz (no token needed: they tell only up or draining).
//   Metrics: GET /metrics (a token needed), the supervisor's and the drain's figures in Prometheus text
//   (with prom-client installed).
//
// Installed with reapkit, it is the `reapkit-process-server` command (bin/reapkit-process-server.mjs,
// which says so plainly when the MCP SDK is missing). From an MCP host's configuration:
//   { "command": "npx", "args": ["-y", "-p", "reapkit", "-p", "@modelcontextprotocol/sdk", "reapkit-process-server", "--allow", "uptime,df"] }
// or `npm run example` (--allow-any; it then speaks JSON-RPC on this terminal's stdin and stdout), or
// over HTTP: `PROCESS_SERVER_TOKEN=... node examples/process-server/server.mjs --http 8080 --allow uptime`.
import { randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { createKeepalive, openControlSocket, registerKeepaliveMetrics, registerSupervisorMetrics, Supervisor } from 'reapkit'
import { withKeepalive } from 'reapkit/mcp'
import { containerConfig } from './container.mjs'
import { createProcessTools } from './tools.mjs'
import { usage } from './usage.mjs'

const fail = (message) => {
  process.stderr.write(`process-server: ${message}\n`)
  process.exit(2)
}
let flags
try {
  ;({ values: flags } = parseArgs({
    options: {
      allow: { type: 'string', multiple: true, default: [] },
      'allow-any': { type: 'boolean', default: false },
      'pass-env': { type: 'string', multiple: true, default: [] },
      'state-file': { type: 'string' },
      http: { type: 'string' },
      host: { type: 'string', default: '127.0.0.1' },
      token: { type: 'string', multiple: true, default: [] },
      'allow-origin': { type: 'string', multiple: true, default: [] },
      'max-body-bytes': { type: 'string', default: String(1024 * 1024) },
      'session-idle-ms': { type: 'string', default: String(10 * 60_000) },
      'output-bytes': { type: 'string', default: String(64 * 1024) },
      'output-total-bytes': { type: 'string', default: String(16 * 1024 * 1024) },
      'control-socket': { type: 'string' },
      container: { type: 'string' },
      engine: { type: 'string' },
      'container-network': { type: 'string' },
      'container-memory': { type: 'string' },
      'container-label': { type: 'string', multiple: true, default: [] },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }))
} catch (err) {
  fail(err.message)
}
if (flags.help) {
  process.stdout.write(usage)
  process.exit(0)
}
/** A flag's value as an integer within [min, max], or exit 2. */
const integer = (name, value, min, max) => {
  const n = Number(value)
  if (!/^\d+$/.test(String(value).trim()) || !Number.isSafeInteger(n) || n < min || n > max) fail(`--${name} must be an integer from ${min} to ${max}: ${value}`)
  return n
}

const allowed = new Set(flags.allow.flatMap((a) => a.split(',')).map((a) => a.trim()).filter(Boolean))
const allowAny = flags['allow-any']
if (allowAny) process.stderr.write('process-server: --allow-any: run_command runs any command as this user\n')
/** The environment commands get: only what is named, never the server's own secrets. */
const childEnv = Object.fromEntries(
  ['PATH', 'HOME', 'LANG', ...flags['pass-env']].filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]]),
)
childEnv.PATH ??= '/usr/local/bin:/usr/bin:/bin'
let container
try {
  container = containerConfig(flags, flags['pass-env'])
} catch (err) {
  fail(err.message)
}
const httpMode = flags.http === undefined ? null : {
  port: integer('http', flags.http, 0, 65535),
  maxBodyBytes: integer('max-body-bytes', flags['max-body-bytes'], 1, 1024 ** 3),
  sessionIdleMs: integer('session-idle-ms', flags['session-idle-ms'], 1, 2 ** 31 - 1),
}

// The drain's stop (shutdownAll). In container mode it goes straight to the engine's stop with a
// 1 s grace (`stop -t 1`, then the engine's kill: a PID 1 without a SIGTERM handler ignores it),
// so that the containers are confirmed gone within the 4 s an MCP host's stdio client gives a
// server between the end of its stdin and SIGKILL (the SDK's close()).
const perProcessBytes = integer('output-bytes', flags['output-bytes'], 0, 1024 ** 3)
const supervisor = new Supervisor({
  ...(container ? { closeTimeoutMs: 0, graceMs: 1000 } : { closeTimeoutMs: 1000 }),
  ...(flags['state-file'] ? { stateFile: flags['state-file'] } : {}),
  // The output history get_output reads: the Supervisor's own (one implementation).
  output: { perChildBytes: perProcessBytes, totalBytes: integer('output-total-bytes', flags['output-total-bytes'], perProcessBytes, 16 * 1024 ** 3) },
})
const leftovers = await supervisor.leftovers // null without a state file
if (leftovers) {
  // Stopped before any new request is taken: processes, and containers through their engine.
  const { found, corrupt, containers } = leftovers
  const gone = containers.filter((c) => c.state === 'gone' && c.ids.length > 0).length
  const left = containers.filter((c) => c.state !== 'gone')
  if (found.length > 0 || corrupt || gone > 0 || left.length > 0) {
    process.stderr.write(
      `process-server: ${found.length} left by a crashed run stopped, ${gone} container(s)` +
        `${left.length > 0 ? `; not confirmed gone: ${left.map((c) => `${c.engine} ${c.survivors.join(',') || c.runId} (${c.state})`).join(', ')}` : ''}` +
        `${corrupt ? '; the state file was unreadable' : ''}\n`,
    )
  }
}
const tools = createProcessTools({ supervisor, allowAny, allowed, childEnv, container })
/** What `reapkit ps` and `top` show as the drain state: the state of whichever keepalive runs. */
let drainState = () => 'serving'
if (flags['control-socket']) {
  try {
    // Never closed: it does not keep the server running, and a stale file is replaced at the next start.
    await openControlSocket(supervisor, { path: flags['control-socket'], drainState: () => drainState() })
  } catch (err) {
    fail(`--control-socket: ${err.message}`)
  }
}
// `logging`: run_command's output lines go out as logging notifications.
const newServer = () => new McpServer({ name: 'reapkit-process-server', version: '0.1.0' }, { capabilities: { logging: {} } })

if (httpMode === null) {
  const keepalive = createKeepalive({
    graceMs: Number(process.env.GRACE_MS ?? 8000),
    // When the drain begins, stop everything this server started: the run_command calls in flight
    // then end (with the signal that stopped them) and are answered within the grace.
    onDrain: () => supervisor.shutdownAll(),
  })
  drainState = () => keepalive.state
  const server = withKeepalive(newServer(), keepalive)
  tools.register(server) // one client: it owns everything
  await server.connect(new StdioServerTransport())
} else {
  const { parseOrigins, serveHttp } = await import('./http.mjs')
  const tokens = [...flags.token, ...(process.env.PROCESS_SERVER_TOKEN ? [process.env.PROCESS_SERVER_TOKEN] : [])].filter(Boolean)
  if (tokens.length === 0) {
    const token = randomBytes(32).toString('base64url')
    tokens.push(token)
    process.stderr.write(`process-server: token ${token}\n`)
  }
  let allowOrigins
  try {
    allowOrigins = parseOrigins(flags['allow-origin'])
  } catch (err) {
    fail(`--allow-origin: ${err.message}`)
  }
  const prometheus = await prometheusFigures()
  const { drain } = await serveHttp({
    ...httpMode,
    host: flags.host,
    tokens,
    allowOrigins,
    graceMs: Number(process.env.GRACE_MS ?? 20_000),
    tools,
    newServer: () => {
      const server = newServer()
      tools.register(server, { ownerOf: (extra) => extra.sessionId }) // each session owns what it starts
      return server
    },
    // Calls in flight are not stopped at the drain's start: they run until they end or the grace
    // does. Then (after the abandoned ones got their error) everything still running is stopped.
    onShutdown: () => supervisor.shutdownAll(),
    metrics: prometheus.read,
  })
  drainState = () => drain.keepalive.state
  // The drain's figures beside the supervisor's (the keepalive is the HTTP drain's own).
  prometheus.add((registry) => registerKeepaliveMetrics(drain.keepalive, registry))
}

/**
 * The figures for /metrics, through prom-client when it is installed (an optional peer dependency):
 * the supervisor's, and the drain's once it exists. `read()` gives null without prom-client.
 */
async function prometheusFigures() {
  const prom = await import('prom-client').catch(() => null)
  if (prom === null) return { read: async () => null, add: () => {} }
  const registry = new prom.Registry()
  registerSupervisorMetrics(supervisor, registry)
  return {
    read: async () => ({ contentType: registry.contentType, text: await registry.metrics() }),
    add: (register) => register(registry),
  }
}
