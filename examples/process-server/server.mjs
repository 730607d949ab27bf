#!/usr/bin/env node
// An MCP stdio server that runs commands for its client, and never leaves one behind.
//
// Tools:
//   run_command        runs a command (its own process group, the kernel's death signal) tied to the
//                      request's id, and answers with its exit status and output once it ends;
//                      cancelling the request (notifications/cancelled) stops the process gracefully
//   list_processes     what this server started, with status
//   terminate_process  stops one of them by pid or request id (nothing it did not start)
//
// On SIGTERM, SIGINT, SIGHUP, stdin end or its host's death it drains: calls in flight finish (or
// are cut at the grace), every process it started is stopped, one report line goes to stderr.
//
// Run it from an MCP host's configuration:
//   { "command": "node", "args": ["<path to reapkit>/examples/process-server/server.mjs"] }
// or `npm run example` (it then speaks JSON-RPC on this terminal's stdin and stdout).
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { z } from 'zod'
import { createKeepalive, Supervisor } from 'reapkit'
import { withKeepalive } from 'reapkit/mcp'

const supervisor = new Supervisor({ closeTimeoutMs: 1000 })
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
    description: 'Run a command (no shell) and return its exit status and output. Cancelling the request stops the process.',
    inputSchema: {
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      timeoutMs: z.number().int().positive().max(600_000).default(60_000),
    },
  },
  async ({ command, args, timeoutMs }, extra) => {
    const requestId = extra.requestId
    let child
    try {
      child = supervisor.spawn(command, args, { requestId, stdio: ['ignore', 'pipe', 'pipe'] })
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
    const stop = (reason) => supervisor.terminate(requestId, { reason, graceMs: 2000 }).catch(() => {})
    extra.signal.addEventListener('abort', () => stop('cancelled'), { once: true })
    const timer = setTimeout(() => stop('timeout'), timeoutMs)
    const [code, signal] = await new Promise((resolve) => child.once('exit', (c, s) => resolve([c, s])))
    clearTimeout(timer)
    return text({ pid: child.pid, requestId, exitCode: code, signal, stdout, stderr })
  },
)

server.registerTool('list_processes', { description: 'The processes this server started.' }, async () =>
  text(supervisor.list().map(({ pid, requestId, command, args, status, exitCode, signal }) => ({ pid, requestId, command, args, status, exitCode, signal }))),
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
      const result = await supervisor.terminate(target, { reason: 'terminate_process', graceMs: 2000 })
      return text(result)
    } catch (err) {
      return failure(`${err.code ?? 'error'}: ${err.message}`)
    }
  },
)

await server.connect(new StdioServerTransport())
