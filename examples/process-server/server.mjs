#!/usr/bin/env node
// An MCP stdio server that runs commands for its client, and never leaves one behind.
//
// Tools:
//   run_command        runs a command under reapkit's native supervisor (its own process group, a
//                      subreaper that adopts what daemonizes, the kernel's death signal) tied to the
//                      request's id, and answers with its exit status and output once it ends;
//                      cancelling the request (notifications/cancelled) stops the process gracefully
//   list_processes     what this server started, with status
//   terminate_process  stops one of them by pid or request id (nothing it did not start)
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
// On SIGTERM, SIGINT, SIGHUP, stdin end or its host's death it drains: calls in flight finish (or
// are cut at the grace), every process it started is stopped, one report line goes to stderr. A
// process that daemonizes (setsid, double fork) is adopted by its supervisor and stopped with it;
// one whose command kills that supervisor itself escapes it (the supervisor's --isolate, a PID
// namespace, would close that too; it is not used here because it needs user namespaces or root).
//
// Options:
//   --allow <cmd>       a command run_command may run, as the client names it (repeatable, or
//                       comma-separated). Default: none.
//   --allow-any         run any command (the example mode: only on a machine and as a user you trust
//                       the client with)
//   --pass-env <NAME>   pass this variable of the server's environment to commands (repeatable)
//   --state-file <path> record what it runs there (Supervisor stateFile): started again after a
//                       crash, it first stops what the crashed incarnation left running, so a
//                       host's restart never doubles its children. One file per server.
//
// Run it from an MCP host's configuration:
//   { "command": "node", "args": ["<path to reapkit>/examples/process-server/server.mjs", "--allow", "uptime,df"] }
// or `npm run example` (--allow-any; it then speaks JSON-RPC on this terminal's stdin and stdout).
import { parseArgs } from 'node:util'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { z } from 'zod'
import { createKeepalive, Supervisor, supervisorPath } from 'reapkit'
import { withKeepalive } from 'reapkit/mcp'

const { values: flags } = parseArgs({
  options: {
    allow: { type: 'string', multiple: true, default: [] },
    'allow-any': { type: 'boolean', default: false },
    'pass-env': { type: 'string', multiple: true, default: [] },
    'state-file': { type: 'string' },
  },
})
const allowed = new Set(flags.allow.flatMap((a) => a.split(',')).map((a) => a.trim()).filter(Boolean))
const allowAny = flags['allow-any']
if (allowAny) process.stderr.write('process-server: --allow-any: run_command runs any command as this user\n')
/** The environment commands get: only what is named, never the server's own secrets. */
const childEnv = Object.fromEntries(
  ['PATH', 'HOME', 'LANG', ...flags['pass-env']].filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]]),
)
childEnv.PATH ??= '/usr/local/bin:/usr/bin:/bin'

// The native supervisor in front of every command: it adopts descendants that daemonize (a subreaper)
// and stops them with the rest, so a setsid escapee is no orphan. Its grace is well inside ours, so
// it finishes its own stop before we would SIGKILL it (a SIGKILLed supervisor cannot stop escapees).
// On Windows reapkit's spawn already runs each command in a kill-on-close job that holds every
// descendant, daemonized or not: no supervisor in front there.
const SUPERVISOR = process.platform === 'win32' ? null : supervisorPath()
const WRAPPER_GRACE_MS = 1500
const STOP_GRACE_MS = 4000
const wrap = (command, args) =>
  SUPERVISOR ? [SUPERVISOR, ['--grace', String(WRAPPER_GRACE_MS), '--', command, ...args]] : [command, args]
// The supervisor exits 128 + n when the command died of signal n, as a shell reports it; that is not
// told apart from a command that exits 128 + n itself, so the status is passed on as it is.
/** A record as the client sees it: the command it asked for, not the supervisor in front of it. */
const view = ({ pid, requestId, command, args, status, exitCode, signal }) => {
  if (SUPERVISOR && command === SUPERVISOR) [command, ...args] = args.slice(args.indexOf('--') + 1)
  return { pid, requestId, command, args, status, exitCode, signal }
}

const supervisor = new Supervisor({ closeTimeoutMs: 1000, ...(flags['state-file'] ? { stateFile: flags['state-file'] } : {}) })
const leftovers = await supervisor.leftovers // null without a state file
if (leftovers) {
  const { found, corrupt } = leftovers // stopped before any new request is taken
  if (found.length > 0 || corrupt) process.stderr.write(`process-server: ${found.length} left by a crashed run stopped${corrupt ? '; the state file was unreadable' : ''}\n`)
}
const keepalive = createKeepalive({
  graceMs: Number(process.env.GRACE_MS ?? 8000),
  // When the drain begins, stop everything this server started: the run_command calls in flight
  // then end (with the signal that stopped them) and are answered within the grace.
  onDrain: () => supervisor.shutdownAll(),
})
const server = withKeepalive(new McpServer({ name: 'reapkit-process-server', version: '0.1.0' }), keepalive)

const text = (value) => ({ content: [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value, null, 2) }] })
const failure = (message) => ({ ...text(message), isError: true })
const tail = (s, max = 4000) => (s.length > max ? `…${s.slice(-max)}` : s)

server.registerTool(
  'run_command',
  {
    description:
      "Run a command (no shell) as the server's user and return its exit status (128 + n: it died of signal n) and output. " +
      'Only commands the server was started with --allow for (or any, under --allow-any). It gets a minimal environment. ' +
      'Cancelling the request stops the process.',
    inputSchema: {
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      timeoutMs: z.number().int().positive().max(600_000).default(60_000),
    },
  },
  async ({ command, args, timeoutMs }, extra) => {
    const requestId = extra.requestId
    if (!allowAny && !allowed.has(command)) {
      // The list matches the command exactly as the client names it: suggest that very name.
      return failure(`${command} is not allowed: start the server with --allow ${command} (or --allow-any)`)
    }
    let child
    try {
      const [file, argv] = wrap(command, args)
      child = supervisor.spawn(file, argv, { requestId, stdio: ['ignore', 'pipe', 'pipe'], env: childEnv })
    } catch (err) {
      return failure(String(err.message ?? err))
    }
    let stdout = ''
    let stderr = ''
    child.stdout?.on('data', (d) => (stdout = tail(stdout + d)))
    child.stderr?.on('data', (d) => (stderr = tail(stderr + d)))
    const started = await new Promise((resolve) => {
      child.once('spawn', () => resolve(null))
      child.once('error', (err) => resolve(err))
    })
    if (started) return failure(`cannot run ${command}: ${started.message}`)
    // Cancellation (and the timeout) stop the process gracefully: SIGTERM to its group, then SIGKILL.
    const stop = (reason) => supervisor.terminate(requestId, { reason, graceMs: STOP_GRACE_MS }).catch(() => {})
    extra.signal.addEventListener('abort', () => stop('cancelled'), { once: true })
    const timer = setTimeout(() => stop('timeout'), timeoutMs)
    const [code, signal] = await new Promise((resolve) => child.once('exit', (c, s) => resolve([c, s])))
    clearTimeout(timer)
    return text({ pid: child.pid, requestId, exitCode: code, signal, stdout, stderr })
  },
)

server.registerTool('list_processes', { description: 'The processes this server started.' }, async () =>
  text(supervisor.list().map(view)),
)

server.registerTool(
  'terminate_process',
  {
    description: 'Stop a process this server started (SIGTERM to its group, then SIGKILL after a grace).',
    inputSchema: { pid: z.number().int().optional(), requestId: z.union([z.string(), z.number()]).optional() },
  },
  async ({ pid, requestId }) => {
    const target = pid ?? requestId
    if (target === undefined) return failure('give a pid or a requestId')
    try {
      const result = await supervisor.terminate(target, { reason: 'terminate_process', graceMs: STOP_GRACE_MS })
      return text(result)
    } catch (err) {
      return failure(`${err.code ?? 'error'}: ${err.message}`)
    }
  },
)

await server.connect(new StdioServerTransport())
