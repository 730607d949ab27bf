// The four tools of the process server (run_command, list_processes, terminate_process, get_output), shared by
// its stdio and HTTP modes. In stdio mode there is one client, which owns everything the server
// runs. In HTTP mode every process belongs to the session that started it: a session sees and stops
// only its own (another session's process gets the same "not found" as a pid never started).
import { StringDecoder } from 'node:string_decoder'
import { capabilities, killProcessGracefully, spawnedInfo, supervisorPath } from 'reapkit'
import { z } from 'zod'
import { containerArgv, learnContainerId } from './container.mjs'

// The native supervisor in front of every command: it adopts descendants that daemonize (a subreaper)
// and stops them with the rest, so a setsid escapee is no orphan. Its grace is well inside ours, so
// it finishes its own stop before we would SIGKILL it (a SIGKILLed supervisor cannot stop escapees).
// On Windows reapkit's spawn already runs each command in a kill-on-close job that holds every
// descendant, daemonized or not: no supervisor in front there.
const SUPERVISOR = process.platform !== 'win32' && capabilities().supervisor ? supervisorPath() : null
const WRAPPER_GRACE_MS = 1500
const STOP_GRACE_MS = 4000
const wrap = (command, args) =>
  SUPERVISOR ? [SUPERVISOR, ['--grace', String(WRAPPER_GRACE_MS), '--', command, ...args]] : [command, args]

/** How long, after the command's exit, its output pipes may take to close (a helper holding them). */
const PIPE_CLOSE_MS = 2000
/** Output lines longer than this go out in pieces. */
const MAX_LINE = 8192
/**
 * Lines waiting to go out to the client beyond this are dropped, and counted in the result's
 * `droppedLines`: a flood must not grow memory. They are not lost: get_output pages through what the
 * Supervisor kept (the newest --output-bytes).
 */
const MAX_PENDING_LINES = 1000
/** The largest page run_command's result carries of each stream (the Supervisor keeps --output-bytes). */
const RESULT_BYTES = 16 * 1024 * 1024

const text = (value) => ({ content: [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value, null, 2) }] })
const failure = (message) => ({ ...text(message), isError: true })
const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref())

/**
 * The tools over one Supervisor. `register(server, { ownerOf })` adds them to an McpServer;
 * `ownerOf(extra)` names the caller (HTTP mode: its session id; stdio mode: null, the one client).
 * `endSession(owner)` stops what an owner still runs (its session ended). `container` (container.mjs's
 * containerConfig, or null): run every command in a fresh container instead. Each process's output
 * is the Supervisor's (its `output` option bounds it): get_output and run_command's result read it.
 */
export function createProcessTools({ supervisor, allowAny, allowed, childEnv, container = null }) {
  // What the supervisor does not know: who started a process, the id its client knows, its tags.
  // Keyed by the supervisor's requestId and the pid (a client may reuse a request id once its
  // process has ended; both together are one process).
  const metas = new Map()
  const metaKey = (key, pid) => `${typeof key}:${key}\0${pid}`
  const metaOf = (record) => metas.get(metaKey(record.requestId, record.pid))
  // The supervisor's requestId: the client's own in stdio mode (as before); in HTTP mode made unique
  // per session (ids restart at 0 in every session). JSON keeps 1 and "1" apart.
  const keyOf = (owner, requestId) => (owner === null ? requestId : `${owner}:${JSON.stringify(requestId)}`)
  /** Only what the supervisor still lists keeps its meta (it forgets finished records past its history). */
  const prune = () => {
    const live = new Set(supervisor.list().map((r) => metaKey(r.requestId, r.pid)))
    for (const k of metas.keys()) if (!live.has(k)) metas.delete(k)
  }
  // The supervisor exits 128 + n when the command died of signal n, as a shell reports it; that is
  // not told apart from a command that exits 128 + n itself, so the status is passed on as it is.
  /**
   * A record as the client sees it: the command it asked for (not the supervisor or the container
   * client in front), its own request id; in container mode its container (id null until learned).
   */
  const view = (record, meta) => {
    let { pid, requestId, command, args, status, exitCode, signal, startedAt, exitedAt } = record
    if (SUPERVISOR && command === SUPERVISOR) [command, ...args] = args.slice(args.indexOf('--') + 1)
    if (meta?.asked) ({ command, args } = meta.asked)
    if (meta) requestId = meta.requestId
    const durationMs = exitedAt ? exitedAt.getTime() - startedAt.getTime() : null // null while it runs
    return { pid, requestId, command, args, status, exitCode, signal, durationMs, tags: meta?.tags ?? [], ...(meta?.container ? { container: { ...meta.container } } : {}) }
  }
  /** The program and args to spawn for what the client asked. */
  const argvOf = (command, args) => (container ? containerArgv(container, command, args) : wrap(command, args))
  const stop = (key, reason) => supervisor.terminate(key, { reason, graceMs: STOP_GRACE_MS })

  function register(server, { ownerOf = () => null } = {}) {
    server.registerTool(
      'run_command',
      {
        description:
          (container
            ? `Run a command (no shell) in a fresh ${container.engine} container of ${container.image} and return its exit status and output. `
            : "Run a command (no shell) as the server's user and return its exit status (128 + n: it died of signal n) and output. ") +
          'Only commands the server was started with --allow for (or any, under --allow-any). It gets a minimal environment. ' +
          'Each output line is sent while it runs, as a logging notification (and as progress, given a progress token); ' +
          `at most ${MAX_PENDING_LINES} lines wait to be sent, lines beyond are dropped and counted in \`droppedLines\`. ` +
          'The result carries the newest output the server keeps of each stream (`outputSkipped`: bytes before it); get_output pages through it. ' +
          'Cancelling the request stops the process.',
        inputSchema: {
          command: z.string().min(1),
          args: z.array(z.string()).default([]),
          timeoutMs: z.number().int().positive().max(600_000).default(60_000),
          tags: z.array(z.string().min(1).max(100)).max(20).default([]),
        },
      },
      async ({ command, args, timeoutMs, tags }, extra) => {
        const owner = ownerOf(extra)
        if (owner === undefined) return failure('no session')
        const requestId = extra.requestId
        const key = keyOf(owner, requestId)
        if (!allowAny && !allowed.has(command)) {
          // The list matches the command exactly as the client names it: suggest that very name.
          return failure(`${command} is not allowed: start the server with --allow ${command} (or --allow-any)`)
        }
        let child
        try {
          const [file, argv] = argvOf(command, args)
          // Container mode: the engine's client gets this server's environment (container.mjs).
          child = supervisor.spawn(file, argv, { requestId: key, stdio: ['ignore', 'pipe', 'pipe'], env: container ? process.env : childEnv })
        } catch (err) {
          return failure(String(err.message ?? err))
        }
        const meta = { owner, requestId, tags, ...(container ? { asked: { command, args }, container: null } : {}) }
        if (child.pid !== undefined) {
          if (metas.size > 2 * 1000) prune()
          metas.set(metaKey(key, child.pid), meta)
          const run = container ? spawnedInfo(child)?.container : undefined
          if (run) {
            meta.container = { engine: run.engine, image: container.image, runId: run.runId, id: null }
            void learnContainerId(run, child, (id) => (meta.container.id = id))
          }
        }
        const closed = new Promise((resolve) => child.once('close', resolve))
        const lines = lineSender(server, extra)
        // The Supervisor keeps the bytes as written (binary too); the lines sent meanwhile are text.
        decodeLines(child.stdout, (d) => lines.push('stdout', d))
        decodeLines(child.stderr, (d) => lines.push('stderr', d))
        const started = await new Promise((resolve) => {
          child.once('spawn', () => resolve(null))
          child.once('error', (err) => resolve(err))
        })
        if (started) return failure(`cannot run ${container ? `${container.engine} for ${command}` : command}: ${started.message}`)
        // Cancellation (and the timeout) stop the process gracefully: SIGTERM to its group, then SIGKILL.
        const cancel = (reason) => stop(key, reason).catch(() => {})
        if (extra.signal.aborted) cancel('cancelled')
        else extra.signal.addEventListener('abort', () => cancel('cancelled'), { once: true })
        const timer = setTimeout(() => cancel('timeout'), timeoutMs)
        const [code, signal] = await new Promise((resolve) => child.once('exit', (c, s) => resolve([c, s])))
        clearTimeout(timer)
        // The last output may still be in the pipes: wait (bounded) for them to close, then send what
        // is left, so every line goes out before the result.
        await Promise.race([closed, delay(PIPE_CLOSE_MS)])
        const dropped = await lines.finish()
        // A container outlives its client's exit by a moment at least (docker removes a --rm one
        // asynchronously), and more when the client was killed: answer once the library's container
        // step (the one a stop started, or the one the client's exit started) has confirmed it gone,
        // so that an answered call, and a drain that waited for it, leaves no container behind.
        if (meta.container) meta.container.state = await containerEnd(child)
        const ran = meta.container ? { container: { ...meta.container } } : {}
        // What the Supervisor kept of each stream (its newest --output-bytes), with how many bytes
        // went before it (`outputSkipped`: get_output tells the same).
        const kept = (stream) => supervisor.output(key, { stream, maxBytes: RESULT_BYTES, align: 'utf8' })
        const [stdout, stderr] = [kept('stdout'), kept('stderr')]
        const skipped = { stdout: stdout?.skipped ?? 0, stderr: stderr?.skipped ?? 0 }
        return text({
          pid: child.pid, requestId, exitCode: code, signal,
          stdout: stdout?.data.toString('utf8') ?? '', stderr: stderr?.data.toString('utf8') ?? '',
          ...ran,
          ...(skipped.stdout + skipped.stderr > 0 ? { outputSkipped: skipped } : {}),
          ...(dropped > 0 ? { droppedLines: dropped } : {}),
        })
      },
    )

    server.registerTool(
      'list_processes',
      {
        description: 'The processes this server started for you (each with its tags); `tag` lists only those with that tag.',
        inputSchema: { tag: z.string().optional() },
      },
      async ({ tag }, extra) => {
        const owner = ownerOf(extra)
        if (owner === undefined) return failure('no session')
        const rows = []
        for (const record of supervisor.list()) {
          const meta = metaOf(record)
          if (owner !== null && meta?.owner !== owner) continue // HTTP mode: only the caller's own
          if (tag !== undefined && !meta?.tags.includes(tag)) continue
          rows.push(view(record, meta))
        }
        return text(rows)
      },
    )

    server.registerTool(
      'get_output',
      {
        description:
          'The output of a process this server started for you, by pid or request id: while it runs and after it ended ' +
          '(the newest bytes of each stream are kept, within the server\'s budget). `offset` is a byte offset into the stream; ' +
          'the answer says where its data starts (`skipped`: bytes no longer kept), `nextOffset` to read on from, and `total`. ' +
          '`encoding` utf8 (default): the bytes as text, a page\'s bounds moved so it never splits a character (invalid bytes read as U+FFFD); ' +
          'base64: the exact bytes.',
        inputSchema: {
          pid: z.number().int().optional(),
          requestId: z.union([z.string(), z.number()]).optional(),
          stream: z.enum(['stdout', 'stderr']).default('stdout'),
          offset: z.number().int().nonnegative().default(0),
          maxBytes: z.number().int().positive().max(1024 * 1024).default(64 * 1024),
          encoding: z.enum(['utf8', 'base64']).default('utf8'),
        },
      },
      async ({ pid, requestId, stream, offset, maxBytes, encoding }, extra) => {
        const owner = ownerOf(extra)
        if (owner === undefined) return failure('no session')
        if (pid === undefined && requestId === undefined) return failure('give a pid or a requestId')
        // Only the caller's own: another session's process is "not found", as one never started.
        const record = supervisor.get(pid ?? keyOf(owner, requestId))
        const meta = record && metaOf(record)
        const page = meta && meta.owner === owner ? supervisor.output(record.requestId, { stream, offset, maxBytes, align: encoding === 'utf8' ? 'utf8' : 'bytes' }) : undefined
        if (!page) return failure(`no output of ${JSON.stringify(pid ?? requestId)} is kept for this session`)
        const running = record.status === 'running' || record.status === 'restarting'
        return text({
          pid: record.pid, requestId: meta.requestId, running, exitCode: record.exitCode, signal: record.signal,
          durationMs: (record.exitedAt ?? new Date()).getTime() - record.startedAt.getTime(),
          stream, offset: page.offset, skipped: page.skipped, encoding, data: page.data.toString(encoding), nextOffset: page.nextOffset, total: page.total,
        })
      },
    )

    server.registerTool(
      'terminate_process',
      {
        description: 'Stop a process this server started for you (SIGTERM to its group, then SIGKILL after a grace), by pid or request id.',
        inputSchema: { pid: z.number().int().optional(), requestId: z.union([z.string(), z.number()]).optional() },
      },
      async ({ pid, requestId }, extra) => {
        const owner = ownerOf(extra)
        if (owner === undefined) return failure('no session')
        let target = pid ?? requestId
        if (target === undefined) return failure('give a pid or a requestId')
        if (owner !== null) {
          // The record the supervisor would act on must be the caller's: by pid, the latest process
          // with that pid (a recycled pid may be another session's now); by request id, the caller's
          // own id, keyed by its session. Anything else is "not found", exactly as a pid never started.
          if (pid === undefined) target = keyOf(owner, requestId)
          const record = supervisor.get(target)
          if (!record || metaOf(record)?.owner !== owner) {
            return failure(`ERR_REAPKIT_NOT_SUPERVISED: no process ${JSON.stringify(pid ?? requestId)} was started by this session`)
          }
        }
        try {
          return text(await stop(target, 'terminate_process'))
        } catch (err) {
          return failure(`${err.code ?? 'error'}: ${err.message}`)
        }
      },
    )
  }

  /** Stops what `owner` still runs, and forgets its records (nobody can ask for them any more). */
  async function endSession(owner) {
    const mine = supervisor.list().filter((r) => metaOf(r)?.owner === owner)
    for (const r of mine) metas.delete(metaKey(r.requestId, r.pid))
    // 'starting': a process runs, not ready yet (or its start is failing); stopped as a running one.
    const running = mine.filter((r) => r.status === 'running' || r.status === 'starting')
    await Promise.allSettled(running.map((r) => stop(r.requestId, 'session closed')))
  }

  return { register, endSession }
}

/** `stream`'s chunks decoded to `onText` as UTF-8 (a character split across chunks stays whole). */
function decodeLines(stream, onText) {
  if (!stream) return
  const decoder = new StringDecoder('utf8')
  stream.on('data', (d) => {
    const s = decoder.write(d)
    if (s) onText(s)
  })
  stream.on('end', () => {
    const s = decoder.end()
    if (s) onText(s)
  })
}

/** Joins the container step of an exited container client: 'gone', 'survived' or 'uncertain'. */
async function containerEnd(child) {
  try {
    const { containers } = await killProcessGracefully(child, { graceMs: STOP_GRACE_MS })
    return containers[0]?.state ?? 'gone'
  } catch {
    return 'uncertain'
  }
}

/**
 * Sends a command's output, line by line, to the client of the request `extra` belongs to: as a
 * logging notification (notifications/message, logger 'stdout' or 'stderr'), and, when the client
 * sent a progress token, as notifications/progress too (progress: the line count; message: the
 * line). extra.sendNotification relates each to the request, so over HTTP they go out on the
 * request's own stream, before its result. In order, one at a time; at most MAX_PENDING_LINES wait.
 */
function lineSender(server, extra) {
  const progressToken = extra._meta?.progressToken
  const partial = { stdout: '', stderr: '' }
  let queue = Promise.resolve()
  let pending = 0
  let count = 0
  let dropped = 0
  const send = (stream, line) => {
    if (pending >= MAX_PENDING_LINES) {
      dropped++
      return
    }
    pending++
    const n = ++count
    queue = queue
      .then(async () => {
        if (!server.server.isMessageIgnored?.('info', extra.sessionId)) {
          await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', logger: stream, data: line } })
        }
        if (progressToken !== undefined) {
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken, progress: n, message: line } })
        }
      })
      .catch(() => {}) // the client is gone: its stream is closed
      .finally(() => pending--)
  }
  return {
    push(stream, chunk) {
      let buf = partial[stream] + chunk
      let nl
      while ((nl = buf.indexOf('\n')) >= 0) {
        send(stream, buf.slice(0, nl).replace(/\r$/, ''))
        buf = buf.slice(nl + 1)
      }
      while (buf.length > MAX_LINE) {
        send(stream, buf.slice(0, MAX_LINE))
        buf = buf.slice(MAX_LINE)
      }
      partial[stream] = buf
    },
    /** Sends the unterminated last lines, waits (bounded) until everything queued went out; the count dropped. */
    async finish() {
      for (const stream of ['stdout', 'stderr']) if (partial[stream] !== '') send(stream, partial[stream])
      partial.stdout = partial.stderr = ''
      await Promise.race([queue, delay(10_000)])
      return dropped
    },
  }
}
