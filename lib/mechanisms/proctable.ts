/**
 * The process table with parentage, start times and command lines: one /proc pass on Linux, one
 * `ps` listing elsewhere. For the testing helpers (which processes did a test leave behind, and are
 * they still the same processes), not for hot paths.
 */
import { closeSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs'

export interface ProcessRow {
  pid: number
  ppid: number
  pgid: number
  /** One-letter state ('R', 'S', 'Z', ...). */
  state: string
  /** Identifies this process among all that ever had its pid: start time, as the system gives it. */
  start: string
  /** Milliseconds since it started (10 ms resolution on Linux, 1 s elsewhere). */
  ageMs: number
  /** Its command line, or its name in brackets when it has none (kernel threads, zombies). */
  command: string
}

// /proc start times are in USER_HZ clock ticks, which is 100 on every Linux architecture's ABI.
const USER_HZ = 100

// One read into a reused buffer: open, read, close (readFileSync adds an fstat and a second read,
// since /proc files report size 0). A stat line is well under 1 KiB even with a 15-byte name.
const statBuffer = Buffer.alloc(4096)

function readStat(pid: number): string | null {
  let fd: number
  try {
    fd = openSync(`/proc/${pid}/stat`, 'r')
  } catch {
    return null // exited meanwhile
  }
  try {
    return statBuffer.toString('latin1', 0, readSync(fd, statBuffer, 0, statBuffer.length, 0))
  } catch {
    return null
  } finally {
    closeSync(fd)
  }
}

function linuxRow(pid: number, uptimeMs: number, withCommand = true): ProcessRow | null {
  const stat = readStat(pid)
  if (stat === null) return null
  const close = stat.lastIndexOf(')')
  const f = stat.slice(close + 2).split(' ')
  const command = withCommand ? (commandOf(pid) ?? '') : ''
  const start = f[19]!
  return {
    pid,
    ppid: Number(f[1]),
    pgid: Number(f[2]),
    state: f[0]!,
    start,
    ageMs: Math.max(0, Math.round(uptimeMs - (Number(start) * 1000) / USER_HZ)),
    command: command || `[${stat.slice(stat.indexOf('(') + 1, close)}]`,
  }
}

/** One row for `pid`, or null when no such process exists. */
export function processRow(pid: number): ProcessRow | null {
  if (process.platform === 'linux') return linuxRow(pid, uptimeMs())
  return readProcessTable().find((r) => r.pid === pid) ?? null
}

function uptimeMs(): number {
  return Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 1000
}

/**
 * Every process now. Throws if the listing itself fails (never "nobody is there"). With
 * `{ commands: false }` (Linux) each row's command is only its name in brackets: one read per
 * process instead of two, for callers that want the command lines of a few rows only (commandOf).
 */
export function readProcessTable(options: { commands?: boolean } = {}): ProcessRow[] {
  if (process.platform === 'linux') {
    const up = uptimeMs()
    const rows: ProcessRow[] = []
    for (const entry of readdirSync('/proc')) {
      if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue
      const row = linuxRow(Number(entry), up, options.commands !== false)
      if (row) rows.push(row)
    }
    return rows
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { spawnSync } = require('node:child_process') as typeof import('node:child_process') // on first use only
  const r = spawnSync('ps', ['-A', '-o', 'pid=,ppid=,pgid=,stat=,etime=,lstart=,command='], {
    encoding: 'utf8',
    timeout: 10_000,
    env: { ...process.env, LC_ALL: 'C' },
  })
  if (r.error) throw r.error
  if (r.status !== 0) throw new Error(`ps failed with status ${r.status}: ${r.stderr.trim()}`)
  const rows: ProcessRow[] = []
  for (const line of r.stdout.split('\n')) {
    // lstart is five words: "Sun Nov 22 04:35:44 2026"
    const m = line.trim().match(/^(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+\s+\S+\s+\S+\s+\S+\s+\S+)\s+(.*)$/)
    if (!m) continue
    rows.push({
      pid: Number(m[1]),
      ppid: Number(m[2]),
      pgid: Number(m[3]),
      state: m[4]!.charAt(0),
      start: m[6]!,
      ageMs: etimeMs(m[5]!),
      command: m[7]!,
    })
  }
  return rows
}

/** ps's elapsed time, [[dd-]hh:]mm:ss, in milliseconds. */
function etimeMs(etime: string): number {
  const [days, rest] = etime.includes('-') ? etime.split('-') : ['0', etime]
  const parts = rest!.split(':').map(Number).reverse()
  return ((Number(days) * 24 + (parts[2] ?? 0)) * 3600 + (parts[1] ?? 0) * 60 + (parts[0] ?? 0)) * 1000
}

/** The command line of `pid` (Linux), or null when it has none (kernel thread, zombie) or is gone. */
export function commandOf(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0+$/, '').replaceAll('\0', ' ') || null
  } catch {
    return null
  }
}

/**
 * The rows that descend from `root` (not including it), through the ppid links of `table`. With
 * `through`, the walk enters only rows it accepts (and so never reaches what lies below the others).
 */
export function descendantsOf(root: number, table: ProcessRow[], through: (row: ProcessRow) => boolean = () => true): ProcessRow[] {
  const children = new Map<number, ProcessRow[]>()
  for (const row of table) {
    const list = children.get(row.ppid)
    if (list) list.push(row)
    else children.set(row.ppid, [row])
  }
  const out: ProcessRow[] = []
  const stack = [root]
  const seen = new Set<number>([root])
  while (stack.length > 0) {
    for (const row of children.get(stack.pop()!) ?? []) {
      if (seen.has(row.pid) || !through(row)) continue
      seen.add(row.pid)
      out.push(row)
      stack.push(row.pid)
    }
  }
  return out
}
