/**
 * How `reapkit ps` and `reapkit top` show a supervisor's children: one table, fitted to a width
 * (80 columns unless the terminal says otherwise), and `top`'s loop: in place on a terminal (the
 * alternate screen, redrawn from its top left each refresh, the cursor hidden meanwhile), plain
 * blocks of lines when the output is not a terminal, JSON lines with --json.
 */
import type { ControlRow, ControlSnapshot } from '../policies/supervisor/control-wire'

/** The columns before COMMAND, each right- or left-aligned to its width. */
const COLUMNS: { title: string; width: number; right?: boolean }[] = [
  { title: 'ID', width: 12 },
  { title: 'PID', width: 7, right: true },
  { title: 'STATUS', width: 10 },
  { title: 'UPTIME', width: 7, right: true },
  { title: 'RST', width: 3, right: true },
  { title: 'CPU', width: 7, right: true },
  { title: 'RSS', width: 6, right: true },
  { title: 'READY', width: 5 },
]

/**
 * `text` with every C0 control (newline and escape included), DEL and C1 control shown as `?`, as
 * procps' ps does: a request id, a command's arguments or a drain state are other programs' text,
 * and raw they could move the cursor, retitle the terminal or forge rows.
 */
export const printable = (text: string): string => text.replace(/[\x00-\x1f\x7f-\x9f]/g, '?')

/** `cpu`: what the CPU column shows for a row (ps: its CPU time; top: its share since the last frame). */
export function table(snap: ControlSnapshot, width: number | null, cpu: (r: ControlRow) => string): string[] {
  const cell = (text: string, i: number): string => {
    const c = COLUMNS[i]!
    text = printable(text)
    const t = text.length > c.width ? `${text.slice(0, c.width - 1)}~` : text
    return c.right ? t.padStart(c.width) : t.padEnd(c.width)
  }
  const row = (cells: string[], command: string): string => fit(`${cells.map(cell).join(' ')} ${printable(command)}`, width)
  const lines = [row(COLUMNS.map((c) => c.title), 'COMMAND')]
  for (const r of snap.processes) {
    lines.push(
      row(
        [
          String(r.id),
          String(r.pid),
          r.stopping ? 'stopping' : r.status,
          r.uptimeMs === null ? '-' : duration(r.uptimeMs),
          String(r.restarts),
          cpu(r),
          r.rssBytes === null ? '-' : size(r.rssBytes),
          r.ready === null ? '-' : r.ready ? 'yes' : 'no',
        ],
        r.command,
      ),
    )
  }
  return lines
}

/** The line above the table: what, how many, the drain state, when. */
export function header(snap: ControlSnapshot, width: number | null): string {
  const running = snap.processes.filter((p) => p.status === 'running' || p.status === 'adopted').length
  const at = snap.at.slice(11, 19)
  return fit(printable(`${snap.processes.length} processes, ${running} running; drain: ${snap.drain}; ${at} UTC`), width)
}

const fit = (line: string, width: number | null): string => (width !== null && line.length > width ? line.slice(0, width) : line).trimEnd()

/** 42s, 4m05s, 2h03m, 3d04h. */
export function duration(ms: number): string {
  const s = Math.floor(ms / 1000)
  if (s < 60) return `${s}s`
  const m = Math.floor(s / 60)
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`
  const h = Math.floor(m / 60)
  if (h < 24) return `${h}h${String(m % 60).padStart(2, '0')}m`
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, '0')}h`
}

/** CPU time as ps shows it: minutes:seconds.hundredths. */
export function cpuTime(ms: number | null): string {
  if (ms === null) return '-'
  const s = ms / 1000
  return `${Math.floor(s / 60)}:${(s % 60).toFixed(2).padStart(5, '0')}`
}

/** 812K, 12.3M, 1.1G. */
export function size(bytes: number): string {
  const units = ['B', 'K', 'M', 'G', 'T']
  let v = bytes
  let u = 0
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024
    u++
  }
  return `${v >= 100 || u === 0 ? Math.round(v) : v.toFixed(1)}${units[u]}`
}

/** `top`'s CPU column: each leader's share of one core since the previous frame (by pid: a restart starts afresh). */
export function cpuShare(): (snap: ControlSnapshot) => (r: ControlRow) => string {
  let last = new Map<number, { cpuMs: number; at: number }>()
  return (snap) => {
    const at = Date.parse(snap.at)
    const prev = last
    last = new Map()
    for (const r of snap.processes) if (r.cpuMs !== null) last.set(r.pid, { cpuMs: r.cpuMs, at })
    return (r) => {
      const p = prev.get(r.pid)
      if (r.cpuMs === null) return '-'
      if (!p || at <= p.at) return '...'
      return `${(((r.cpuMs - p.cpuMs) / (at - p.at)) * 100).toFixed(1)}%`
    }
  }
}

/** Terminal control: what `top` writes around and between its frames on a terminal. */
export const TTY = {
  enter: '\x1b[?1049h\x1b[?25l', // the alternate screen, cursor hidden
  leave: '\x1b[?25h\x1b[?1049l',
  home: '\x1b[H',
  eol: '\x1b[K', // clears what an older, longer line left
  rest: '\x1b[J', // clears the lines an older, longer frame left
}

/** One frame on a terminal: from the top left, each line cleared to its end, the rest of the screen cleared. */
export function ttyFrame(lines: string[], rows: number | null): string {
  const shown = rows !== null && lines.length > rows - 1 ? [...lines.slice(0, rows - 2), `... ${lines.length - rows + 2} more`] : lines
  return `${TTY.home}${shown.map((l) => `${l}${TTY.eol}`).join('\r\n')}\r\n${TTY.rest}`
}
