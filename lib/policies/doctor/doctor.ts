/**
 * findOrphans(): the process trees whose stdio host is gone, by an exact criterion rather than by
 * name: stdin is a pipe nobody can write to any more AND stdout is a pipe nobody reads. A process
 * with a live peer on either pipe is never a candidate. Where the platform keeps that (Linux: /proc
 * and the kernel's word on each pipe; macOS, compile-checked only: libproc) is read by one view
 * per platform (./views.ts); the trees and the leftovers are built here alike for all.
 * Stopping what it lists: ./stop.ts.
 *
 * macOS, not there yet: `holds` (always empty) and `paths` (ERR_REAPKIT_UNSUPPORTED).
 */
import { typeError } from '../../ground/errors'
import { validateMs, validateOptions } from '../../ground/validate'
import { descendantsOf, type ProcessRow } from '../../mechanisms/proctable'
import { darwinProcAvailable } from '../../mechanisms/proctable-darwin'
import { darwinView, linuxView, type ProcView } from './views'

export interface OrphanProcess {
  pid: number
  ppid: number
  pgid: number
  /**
   * Start time as /proc gives it (clock ticks since boot; on macOS 'seconds.microseconds' since the
   * epoch, empty when libproc would not say): with the pid, names this process exactly.
   */
  start: string
  state: string
  command: string
  ageMs: number
  /** Resident memory, bytes. */
  rssBytes: number
  uid: number
  /**
   * What it still holds: listening sockets ('tcp 127.0.0.1:8080'), files under the paths asked for.
   * Always empty on macOS (not read there yet).
   */
  holds: string[]
  /** Why it is listed: the dead pipes (for a process that lost its host), or its link to the tree. */
  evidence: string
}

export interface OrphanTree {
  /** The topmost process of the chain that lost its host (e.g. the `sh -c` above a server). */
  root: number
  /** Every process of the tree, root first: descendants and members of groups the tree leads. */
  processes: OrphanProcess[]
  rssBytes: number
}

export interface DoctorReport {
  /** Trees whose stdio host is gone: what `reapkit doctor --stop` stops. */
  trees: OrphanTree[]
  /** Re-parented to init with their session gone, stdio not a dead pipe pair (daemons): listed apart. */
  reparented: OrphanProcess[]
  /** Zombies their (living) parent has not reaped: listed apart. */
  zombies: OrphanProcess[]
  /** Processes whose fd table could not be read (other users' without privilege): never candidates. */
  unreadable: number
  /** How many processes the pass looked at, and how long it took (not counting the zombie re-check). */
  scanned: number
  durationMs: number
}

export interface FindOrphansOptions {
  /** Every user's processes, not only this user's. Default false. */
  allUsers?: boolean
  /** Report open files under these folders (e.g. a SQLite database a server keeps locked). */
  paths?: string[]
  /** How long a zombie must stay unreaped to be listed. Default 100 ms. */
  zombieMs?: number
}

const INIT_PIDS = new Set([1])

function checkOptions(options: FindOrphansOptions): { allUsers: boolean; paths: string[]; zombieMs: number } {
  options = validateOptions(options)
  if (options.allUsers !== undefined && typeof options.allUsers !== 'boolean') {
    throw typeError('ERR_INVALID_ARG_TYPE', 'The "allUsers" option must be a boolean')
  }
  const paths = options.paths ?? []
  if (!Array.isArray(paths) || !paths.every((p) => typeof p === 'string' && p.length > 0)) {
    throw typeError('ERR_INVALID_ARG_TYPE', 'The "paths" option must be an array of non-empty strings')
  }
  return { allUsers: options.allUsers === true, paths: paths.map((p) => p.replace(/\/+$/, '') || '/'), zombieMs: validateMs(options.zombieMs, 'zombieMs') ?? 100 }
}

const unsupported = (what: string): Error => Object.assign(new Error(what), { code: 'ERR_REAPKIT_UNSUPPORTED' })

/** Lists the process trees that lost their stdio host, and the other leftovers apart. Never signals. */
export async function findOrphans(options: FindOrphansOptions = {}): Promise<DoctorReport> {
  const opts = checkOptions(options)
  const darwin = process.platform === 'darwin' && darwinProcAvailable()
  if (process.platform !== 'linux' && !darwin) {
    throw unsupported(
      process.platform === 'darwin'
        ? 'findOrphans on macOS needs the reapkit addon built with native/proc_darwin.cc (libproc); it is not loaded'
        : `findOrphans needs /proc (Linux) or libproc (macOS); not available on ${process.platform}`,
    )
  }
  if (darwin && opts.paths.length > 0) throw unsupported('findOrphans({ paths }) (`doctor --path`) is Linux only: open files are not read on macOS yet')
  const started = performance.now()
  const view = darwin ? darwinView() : linuxView()
  const { table, byPid } = view
  const me = process.getuid?.() ?? -1
  const mine = (pid: number): boolean => opts.allUsers || view.uid(pid) === me

  // Ourselves and our ancestors are never listed, whatever their pipes say.
  const exempt = new Set<number>()
  for (let p: number | undefined = process.pid; p && !exempt.has(p); p = byPid.get(p)?.ppid) exempt.add(p)
  const { evidence, unreadable } = view.candidates(exempt, mine)

  // Trees: the topmost candidate of each chain, its descendants, and the groups it leads.
  const roots = new Set<number>()
  for (const pid of evidence.keys()) {
    let root = pid
    for (let up = byPid.get(root)?.ppid; up !== undefined && evidence.has(up) && up !== root; up = byPid.get(root)?.ppid) root = up
    roots.add(root)
  }
  const groups = new Map<number, ProcessRow[]>()
  for (const row of table) {
    const list = groups.get(row.pgid)
    if (list) list.push(row)
    else groups.set(row.pgid, [row])
  }
  const withSockets = evidence.size > 0
  const placed = new Set<number>()
  const trees: OrphanTree[] = []
  for (const root of [...roots].sort((a, b) => a - b)) {
    if (placed.has(root)) continue
    const rows: ProcessRow[] = [byPid.get(root)!]
    const seen = new Set([root])
    // A process belongs to one tree only (the first, by root pid, that reaches it).
    for (const d of descendantsOf(root, table)) if (!seen.has(d.pid) && !placed.has(d.pid)) seen.add(d.pid), rows.push(d)
    for (let i = 0; i < rows.length; i++) {
      for (const m of groups.get(rows[i]!.pid) ?? []) if (!seen.has(m.pid) && !placed.has(m.pid)) seen.add(m.pid), rows.push(m)
    }
    if (rows.some((r) => exempt.has(r.pid))) continue
    const processes = rows.map((r) => describe(view, r, evidence.get(r.pid) ?? link(r, root, seen), opts.paths, withSockets))
    for (const p of processes) placed.add(p.pid)
    trees.push({ root, processes, rssBytes: processes.reduce((s, p) => s + p.rssBytes, 0) })
  }

  // Apart: re-parented to init with their session gone (the launcher that started them is dead).
  const reparented: OrphanProcess[] = []
  const zombieRows: ProcessRow[] = []
  for (const row of table) {
    if (placed.has(row.pid) || exempt.has(row.pid)) continue
    if (row.state === 'Z') {
      if (row.ppid > 0 && byPid.has(row.ppid) && mine(row.pid)) zombieRows.push(row)
      continue
    }
    if (!INIT_PIDS.has(row.ppid) || !mine(row.pid)) continue
    const sid = view.sid(row.pid)
    if (sid === 0 || sid === row.pid || byPid.has(sid)) continue
    const io = view.stdioNames(row.pid)
    reparented.push(describe(view, row, `parent gone (re-parented to ${row.ppid}), session ${sid} gone; stdin ${io.stdin}, stdout ${io.stdout}`, opts.paths, withSockets))
  }
  const durationMs = performance.now() - started
  // Zombies that stay unreaped for a moment (a parent reaping normally takes far less).
  const zombies: OrphanProcess[] = []
  if (zombieRows.length > 0) {
    await new Promise((r) => setTimeout(r, opts.zombieMs))
    for (const row of zombieRows) {
      const now = view.row(row.pid)
      if (now?.state === 'Z' && now.start === row.start) zombies.push(describe(view, row, `zombie; parent ${row.ppid} has not reaped it`, [], false))
    }
  }
  return {
    trees,
    reparented,
    zombies,
    unreadable,
    scanned: table.length,
    durationMs,
  }
}

function link(row: ProcessRow, root: number, members: Set<number>): string {
  return members.has(row.ppid) || row.ppid === root ? `descendant of ${root}` : `in process group ${row.pgid} of the tree`
}

function describe(view: ProcView, row: ProcessRow, evidence: string, paths: string[], withSockets: boolean): OrphanProcess {
  return {
    pid: row.pid,
    ppid: row.ppid,
    pgid: row.pgid,
    start: row.start,
    state: row.state,
    command: view.command(row),
    ageMs: row.ageMs,
    rssBytes: view.rssBytes(row.pid),
    uid: view.uid(row.pid),
    holds: [...new Set(view.holds(row, paths, withSockets))],
    evidence,
  }
}
