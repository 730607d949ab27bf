/**
 * `reapkit ps | logs | restart | stop | top`: the command line of a running Supervisor, through its
 * control socket (lib/policies/supervisor/control.ts; opened by the host, opt-in). bin/reapkit runs
 * this with node for those five first words. Exit status: 0 done, 1 the supervisor refused or could
 * not be reached, 2 usage.
 */
import type { ControlRow, ControlSnapshot } from '../policies/supervisor/control-wire'
import { ControlError, ask, exchange } from './control-client'
import { cpuShare, cpuTime, header, printable, table, TTY, ttyFrame } from './control-views'

const USAGE = `Usage: reapkit ps [--json] [--socket PATH]
       reapkit logs ID [-f] [--json] [--socket PATH]
       reapkit restart ID [--json] [--socket PATH]
       reapkit stop ID [--json] [--socket PATH]
       reapkit top [--interval MS] [--count N] [--json] [--socket PATH]

The command line of a running Supervisor, through the control socket its host opened
(openControlSocket; opt-in). Only its own user may use it. The socket is --socket PATH, or the
REAPKIT_SOCKET environment variable.

  ps        every child: id (its request id, or its pid), pid, status, uptime, restarts, CPU time,
            resident memory, readiness; the first line says the supervisor's drain state
  logs ID   what is kept of the child's newest run: its stdout to stdout, its stderr to stderr;
            -f then follows what it writes, across restarts, until it ends (or Ctrl-C)
  restart ID  stops the child (SIGTERM to its group, SIGKILL after the grace) and starts it again
  stop ID   stops the child, as restart does, and leaves it stopped
  top       ps, refreshed every --interval ms (default 2000), CPU as a share of one core since
            the last refresh; on a terminal in place (q or Ctrl-C quits), otherwise a block of
            plain lines per refresh; --count N stops after N refreshes
  --json    machine-readable: one JSON value (logs -f and top: one per line)

ID is a request id, or a pid. These names are reapkit's subcommands when they come first; to run
a program of that name under the wrapper, put -- before it: reapkit -- top.
Docs: docs/operators.md.
`

function usageError(message: string): never {
  process.stderr.write(`reapkit: ${message}\n\n${USAGE}`)
  process.exit(2)
}

interface Args {
  command: string
  id: string | undefined
  json: boolean
  follow: boolean
  socket: string
  intervalMs: number
  count: number | null
}

function parse(argv: string[]): Args {
  const [command = '', ...rest] = argv
  const a: Partial<Args> & { command: string } = { command, json: false, follow: false, intervalMs: 2000, count: null }
  const positional: string[] = []
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1
    const name = eq > 0 ? arg.slice(0, eq) : arg
    const value = (): string => {
      const v = eq > 0 ? arg.slice(eq + 1) : rest[++i]
      if (v === undefined || v === '') usageError(`${name} needs a value`)
      return v
    }
    const integer = (min: number, max: number): number => {
      const v = value()
      const n = Number(v)
      if (!/^\d+$/.test(v) || n < min || n > max) usageError(`${name} must be an integer from ${min} to ${max}: ${v}`)
      return n
    }
    if (name === '--help' || name === '-h') {
      process.stdout.write(USAGE)
      process.exit(0)
    } else if (name === '--json') a.json = true
    else if ((name === '-f' || name === '--follow') && command === 'logs') a.follow = true
    else if (name === '--socket') a.socket = value()
    else if (name === '--interval' && command === 'top') a.intervalMs = integer(100, 3_600_000)
    else if (name === '--count' && command === 'top') a.count = integer(1, Number.MAX_SAFE_INTEGER)
    else if (arg.startsWith('-') && arg !== '-') usageError(`unknown option ${arg} for ${command}`)
    else positional.push(arg)
  }
  const wantsId = command === 'logs' || command === 'restart' || command === 'stop'
  if (wantsId && positional.length !== 1) usageError(`${command} takes one ID (a request id or a pid)`)
  if (!wantsId && positional.length > 0) usageError(`${command} takes no argument: ${positional[0]}`)
  a.id = positional[0]
  a.socket ??= process.env.REAPKIT_SOCKET
  if (!a.socket) usageError('no control socket: give --socket PATH or set REAPKIT_SOCKET')
  return a as Args
}

const out = (s: string): boolean => process.stdout.write(s)

async function ps(a: Args): Promise<void> {
  const snap = (await ask(a.socket, { op: 'ps' })) as unknown as ControlSnapshot
  if (a.json) return void out(`${JSON.stringify({ drain: snap.drain, at: snap.at, processes: snap.processes })}\n`)
  const width = process.stdout.isTTY ? process.stdout.columns || 80 : null
  out(`${[header(snap, width), ...table(snap, width, (r: ControlRow) => cpuTime(r.cpuMs))].join('\n')}\n`)
}

async function stopOrRestart(a: Args): Promise<void> {
  const { result } = await ask(a.socket, { op: a.command, id: a.id })
  if (a.json) return void out(`${JSON.stringify(result)}\n`)
  const r = result as { stop?: StopLike; record?: { pid: number } } & StopLike
  const stop: StopLike = a.command === 'restart' ? r.stop! : r
  const how = `${stop.escalated ? 'SIGKILL after the grace' : 'SIGTERM'}, ${Math.round(stop.durationMs)} ms`
  if (a.command === 'stop') out(`stopped ${a.id} (pid ${stop.pid}): ${how}${stop.survivors.length ? `; survivors: ${stop.survivors.join(' ')}` : ''}\n`)
  else out(`restarted ${a.id}: pid ${stop.pid} stopped (${how}), pid ${r.record?.pid} started\n`)
}
interface StopLike {
  pid: number
  escalated: boolean
  durationMs: number
  survivors: number[]
}

async function logs(a: Args): Promise<void> {
  let failure: ControlError | null = null
  const { done, socket } = exchange(
    a.socket,
    { op: 'logs', id: a.id, follow: a.follow },
    (v) => {
      if (v.ok === false) failure = new ControlError(String(v.message), String(v.code))
      const page = v.page as { stream: 'stdout' | 'stderr'; data: string; skipped: number; incarnation: number; pid: number } | undefined
      if (!page) return
      const data = Buffer.from(page.data, 'base64')
      if (a.json) return void out(`${JSON.stringify({ ...page, data: data.toString('utf8') })}\n`)
      if (page.skipped > 0) process.stderr.write(`reapkit: ${page.skipped} bytes of ${page.stream} (pid ${page.pid}) are no longer kept\n`)
      ;(page.stream === 'stdout' ? process.stdout : process.stderr).write(data)
    },
    a.follow ? 0 : undefined,
  )
  if (a.follow) for (const s of ['SIGINT', 'SIGTERM'] as const) process.once(s, () => socket.destroy())
  await done
  if (failure) throw failure
}

async function top(a: Args): Promise<void> {
  const tty = !a.json && process.stdout.isTTY === true
  const share = cpuShare()
  let stop = false
  let wake: (() => void) | null = null
  const quit = (): void => {
    stop = true
    wake?.()
  }
  process.once('SIGINT', quit)
  process.once('SIGTERM', quit)
  if (tty && process.stdin.isTTY) {
    process.stdin.setRawMode(true)
    process.stdin.on('data', (d: Buffer) => (d.includes(0x71) || d.includes(0x03)) && quit()) // q, Ctrl-C
  }
  if (tty) out(TTY.enter)
  try {
    for (let n = 0; !stop && (a.count === null || n < a.count); n++) {
      if (n > 0) await new Promise<void>((r) => ((wake = r), setTimeout(r, a.intervalMs)))
      if (stop) break
      const snap = (await ask(a.socket, { op: 'ps' })) as unknown as ControlSnapshot
      const cpu = share(snap)
      if (a.json) out(`${JSON.stringify({ ...snap, processes: snap.processes.map((r) => ({ ...r, cpuShare: cpu(r) })) })}\n`)
      else if (tty) {
        const width = process.stdout.columns || 80
        out(ttyFrame([header(snap, width), ...table(snap, width, cpu)], process.stdout.rows || null))
      } else out(`${[header(snap, 80), ...table(snap, 80, cpu)].join('\n')}\n\n`)
    }
  } finally {
    if (tty) out(TTY.leave)
    if (tty && process.stdin.isTTY) process.stdin.setRawMode(false)
    process.stdin.pause()
  }
}

async function main(): Promise<void> {
  const a = parse(process.argv.slice(2))
  try {
    if (a.command === 'ps') await ps(a)
    else if (a.command === 'logs') await logs(a)
    else if (a.command === 'restart' || a.command === 'stop') await stopOrRestart(a)
    else if (a.command === 'top') await top(a)
    else usageError(`unknown command ${a.command}`)
  } catch (err) {
    const e = err as ControlError
    process.stderr.write(`reapkit ${a.command}: ${printable(`${e.message}${e.code ? ` (${e.code})` : ''}`)}\n`)
    process.exitCode = 1
  }
}

void main()
