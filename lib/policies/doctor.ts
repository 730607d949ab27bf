/**
 * findOrphans(): the process trees whose stdio host is gone, by an exact criterion rather than by
 * name: stdin is a pipe nobody can write to any more AND stdout is a pipe nobody reads (Linux,
 * /proc/PID/fd + fdinfo of every process). A process with a live peer on either pipe is never a
 * candidate; the kernel confirms each pipe verdict (native/pipe_probe.cc). stopOrphans(): stops such trees, every process pinned by pidfd and re-checked by start
 * time after the listing, so a pid recycled in between is never signalled.
 */
import { readFileSync, readlinkSync, statSync } from 'node:fs'
import { typeError } from '../ground/errors'
import { openProcess, type ProcessHandle } from '../mechanisms/handle'
import { binding } from '../ground/native'
import { commandOf, descendantsOf, processRow, type ProcessRow, readProcessTable } from '../mechanisms/proctable'
import { fdTargets, listeningSockets, pipeInode, pipeOrSocketStdio, scanFds, socketInode, unixPeers } from '../mechanisms/pipes'
import { validateMs, validateOptions } from '../ground/validate'
import { settlesWithin } from '../ground/wait'

export interface OrphanProcess {
  pid: number
  ppid: number
  pgid: number
  /** Start time as /proc gives it (clock ticks since boot): with the pid, names this process exactly. */
  start: string
  state: string
  command: string
  ageMs: number
  /** Resident memory, bytes. */
  rssBytes: number
  uid: number
  /** What it still holds: listening sockets ('tcp 127.0.0.1:8080'), files under the paths asked for. */
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

const PAGE = 4096
const INIT_PIDS = new Set([1])

interface StatExtra {
  sid: number
  rssBytes: number
}

function statExtra(pid: number): StatExtra {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return { sid: Number(f[3]), rssBytes: Number(f[21]) * PAGE }
  } catch {
    return { sid: 0, rssBytes: 0 }
  }
}

function stdioLinks(pid: number): { stdin: string; stdout: string } {
  const link = (fd: number): string => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`)
    } catch {
      return '(closed)'
    }
  }
  return { stdin: link(0), stdout: link(1) }
}

function uidOf(pid: number): number {
  try {
    return statSync(`/proc/${pid}`).uid
  } catch {
    return -1
  }
}

/**
 * The kernel's own word on a stdio pipe the scan found without a peer: holders that this /proc
 * cannot show (another PID namespace, e.g. a container runtime holding a `docker exec`'s pipes)
 * count there. See native/pipe_probe.cc. Without the addon, the scan's answer stands.
 */
function pipePeerAlive(pid: number, fd: 0 | 1): boolean {
  return binding?.pipePeerAlive(pid, fd, fd === 0) === true
}

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

/** Lists the process trees that lost their stdio host, and the other leftovers apart. Never signals. */
export async function findOrphans(options: FindOrphansOptions = {}): Promise<DoctorReport> {
  const opts = checkOptions(options)
  if (process.platform !== 'linux') {
    throw Object.assign(new Error(`findOrphans needs /proc (Linux); not available on ${process.platform}`), { code: 'ERR_REAPKIT_UNSUPPORTED' })
  }
  const started = performance.now()
  const table = readProcessTable({ commands: false })
  const byPid = new Map(table.map((r) => [r.pid, r]))
  // With the addon, the kernel answers for each pipe (pipePeerAlive), so only fds 0 and 1 need
  // reading; without it, one pass over every process's fds and fdinfo says who holds which end.
  const scan = binding ? null : scanFds(byPid.keys())
  let unreadable = scan?.unreadable.size ?? 0
  const me = process.getuid?.() ?? -1
  const mine = (pid: number): boolean => opts.allUsers || uidOf(pid) === me

  // Ourselves and our ancestors are never listed, whatever their pipes say.
  const exempt = new Set<number>()
  for (let p: number | undefined = process.pid; p && !exempt.has(p); p = byPid.get(p)?.ppid) exempt.add(p)

  // Stdin can bring nothing more: a pipe with no writer, or a unix socket whose peer is gone.
  // Stdout reaches nobody: a pipe with no reader, or such a socket. Pipes are judged from the scan
  // (and stdout again by the kernel, see hasHiddenReader); sockets by their peer (see unixPeers).
  const pending: Array<{ pid: number; stdin: string; stdout: string }> = []
  let needPeers = false
  for (const pid of byPid.keys()) {
    if (exempt.has(pid)) continue
    let stdin: string | null
    let stdout: string | null
    if (scan) {
      ;({ stdin, stdout } = scan.stdio.get(pid) ?? { stdin: null, stdout: null })
    } else {
      const io = pipeOrSocketStdio(pid)
      if (io === 'unreadable') unreadable++
      if (io === null || io === 'unreadable') continue
      ;({ stdin, stdout } = io)
    }
    if (stdin === null || stdout === null) continue
    const inPipe = pipeInode(stdin)
    const outPipe = pipeInode(stdout)
    if (inPipe === null && socketInode(stdin) === null) continue
    if (outPipe === null && socketInode(stdout) === null) continue
    if (!mine(pid)) continue
    if (inPipe !== null && (scan ? (scan.pipes.get(inPipe)?.writers.size ?? 0) > 0 : pipePeerAlive(pid, 0))) continue
    if (outPipe !== null && (scan ? (scan.pipes.get(outPipe)?.readers.size ?? 0) > 0 : pipePeerAlive(pid, 1))) continue
    if (inPipe === null || outPipe === null) needPeers = true
    pending.push({ pid, stdin, stdout })
  }
  const peers = needPeers ? unixPeers() : null
  const evidence = new Map<number, string>()
  for (const { pid, stdin, stdout } of pending) {
    const inSock = socketInode(stdin)
    const outSock = socketInode(stdout)
    // A socket whose peer cannot be told (no `ss`, another network namespace) is never a candidate.
    if (inSock !== null && peers?.get(inSock) !== 0) continue
    if (outSock !== null && peers?.get(outSock) !== 0) continue
    evidence.set(pid, `stdin ${stdin} has no ${inSock === null ? 'writer' : 'peer'}; stdout ${stdout} has no ${outSock === null ? 'reader' : 'peer'}`)
  }

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
  const sockets = evidence.size > 0 ? listeningSockets() : new Map<number, string>()
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
    const processes = rows.map((r) => describe(r, evidence.get(r.pid) ?? link(r, root, seen), sockets, opts.paths))
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
    const { sid } = statExtra(row.pid)
    if (sid === 0 || sid === row.pid || byPid.has(sid)) continue
    const io = stdioLinks(row.pid)
    reparented.push(describe(row, `parent gone (re-parented to ${row.ppid}), session ${sid} gone; stdin ${io.stdin}, stdout ${io.stdout}`, sockets, opts.paths))
  }
  const durationMs = performance.now() - started
  // Zombies that stay unreaped for a moment (a parent reaping normally takes far less).
  const zombies: OrphanProcess[] = []
  if (zombieRows.length > 0) {
    await new Promise((r) => setTimeout(r, opts.zombieMs))
    for (const row of zombieRows) {
      const now = processRow(row.pid)
      if (now?.state === 'Z' && now.start === row.start) zombies.push(describe(row, `zombie; parent ${row.ppid} has not reaped it`, new Map(), []))
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

function describe(row: ProcessRow, evidence: string, sockets: Map<number, string>, paths: string[]): OrphanProcess {
  const holds: string[] = []
  if (sockets.size > 0 || paths.length > 0) {
    for (const target of fdTargets(row.pid)) {
      const sock = /^socket:\[(\d+)\]$/.exec(target)
      const listening = sock ? sockets.get(Number(sock[1])) : undefined
      if (listening) holds.push(listening)
      else if (paths.some((p) => target === p || target.startsWith(p === '/' ? '/' : `${p}/`))) holds.push(target)
    }
  }
  return {
    pid: row.pid,
    ppid: row.ppid,
    pgid: row.pgid,
    start: row.start,
    state: row.state,
    command: commandOf(row.pid) ?? row.command,
    ageMs: row.ageMs,
    rssBytes: statExtra(row.pid).rssBytes,
    uid: uidOf(row.pid),
    holds: [...new Set(holds)],
    evidence,
  }
}

// ---- Stopping ----

export interface StopOrphansOptions {
  /** How long after SIGTERM before SIGKILL. Default 5000. */
  graceMs?: number
  /** After SIGKILL, how long to wait for the tree to be gone before reporting survivors. Default 5000. */
  confirmMs?: number
}

export interface StoppedTree {
  root: number
  /** Processes signalled (pinned, same start time as listed, or adopted by the tree since). */
  signalled: number[]
  /** True when SIGKILL had to be sent. */
  escalated: boolean
  /** Listed processes not signalled: already gone, or their pid now names another process. */
  skipped: Array<{ pid: number; reason: 'gone' | 'recycled' }>
  /** Still alive at the end (empty unless something resisted SIGKILL). */
  survivors: number[]
}

interface Pinned {
  pid: number
  handle: ProcessHandle
  gone: boolean
}

/** Pins `pid` if it is still the process that started at `start`; null when it is gone or recycled. */
function pin(pid: number, start: string): { pinned: Pinned } | { reason: 'gone' | 'recycled' } {
  let handle: ProcessHandle
  try {
    handle = openProcess(pid)
  } catch {
    return { reason: 'gone' }
  }
  // Read after the pidfd exists: if the start time still matches, the pidfd names the listed process.
  const row = processRow(pid)
  if (!row || row.state === 'Z' || row.start !== start) {
    handle.close()
    return { reason: !row || row.state === 'Z' ? 'gone' : 'recycled' }
  }
  const pinned: Pinned = { pid, handle, gone: false }
  void handle.exited.then(() => (pinned.gone = true), () => {})
  return { pinned }
}

/** Pins what the pinned processes have started or taken into their groups since the listing. */
function adopt(pinned: Map<number, Pinned>): void {
  const table = readProcessTable({ commands: false })
  const alive = [...pinned.values()].filter((p) => !p.gone).map((p) => p.pid)
  const leads = new Set(alive)
  const found: ProcessRow[] = []
  for (const pid of alive) found.push(...descendantsOf(pid, table))
  for (const row of table) if (leads.has(row.pgid)) found.push(row)
  for (const row of found) {
    if (pinned.has(row.pid) || row.state === 'Z' || row.pid === process.pid) continue
    const r = pin(row.pid, row.start)
    if ('pinned' in r) pinned.set(row.pid, r.pinned)
  }
}

function signalAll(pinned: Map<number, Pinned>, signal: NodeJS.Signals, sent: Set<number>): void {
  for (const p of pinned.values()) {
    if (p.gone) continue
    try {
      p.handle.signal(signal)
      sent.add(p.pid)
    } catch {
      // ESRCH: it exited meanwhile
    }
  }
}

async function allGone(pinned: Map<number, Pinned>, ms: number): Promise<boolean> {
  const waits = [...pinned.values()].filter((p) => !p.gone).map((p) => p.handle.exited.catch(() => {}))
  return settlesWithin(Promise.all(waits), ms)
}

/** Stops one listed tree: SIGTERM to every pinned process, bounded grace, SIGKILL to what remains. */
export async function stopOrphanTree(tree: OrphanTree, options: StopOrphansOptions = {}): Promise<StoppedTree> {
  options = validateOptions(options)
  const graceMs = validateMs(options.graceMs, 'graceMs') ?? 5000
  const confirmMs = validateMs(options.confirmMs, 'confirmMs') ?? 5000
  const pinned = new Map<number, Pinned>()
  const skipped: StoppedTree['skipped'] = []
  for (const p of tree.processes) {
    const r = pin(p.pid, p.start)
    if ('pinned' in r) pinned.set(p.pid, r.pinned)
    else skipped.push({ pid: p.pid, reason: r.reason })
  }
  const sent = new Set<number>()
  let escalated = false
  try {
    if (pinned.size > 0) {
      adopt(pinned)
      signalAll(pinned, 'SIGTERM', sent)
      signalAll(pinned, 'SIGCONT', new Set()) // a stopped process can only act on SIGTERM once continued
      if (!(await allGone(pinned, graceMs))) {
        escalated = true
        adopt(pinned) // what it started during the grace goes too
        signalAll(pinned, 'SIGKILL', sent)
        await allGone(pinned, confirmMs)
      }
    }
    return {
      root: tree.root,
      signalled: [...sent].sort((a, b) => a - b),
      escalated,
      skipped,
      survivors: [...pinned.values()].filter((p) => !p.gone).map((p) => p.pid),
    }
  } finally {
    for (const p of pinned.values()) p.handle.close()
  }
}

/** Stops every tree of a findOrphans() report, all at once; one result per tree. */
export async function stopOrphans(report: Pick<DoctorReport, 'trees'>, options: StopOrphansOptions = {}): Promise<StoppedTree[]> {
  return Promise.all(report.trees.map((t) => stopOrphanTree(t, options)))
}
