/**
 * stopOrphans(): stops the trees findOrphans() listed (lib/policies/doctor/doctor.ts), every process
 * pinned (pidfd on Linux; pid + kqueue on macOS) and re-checked by start time after the listing, so
 * a pid recycled in between is never signalled.
 */
import { validateMs, validateOptions } from '../../ground/validate'
import { settlesWithin } from '../../ground/wait'
import { openProcess, type ProcessHandle } from '../../mechanisms/handle'
import { descendantsOf, processRow, type ProcessRow, readProcessTable } from '../../mechanisms/proctable'
import { darwinProcAvailable, darwinProcessRow, darwinProcessTable } from '../../mechanisms/proctable-darwin'
import type { DoctorReport, OrphanTree } from './doctor'

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
  start: string
  handle: ProcessHandle
  gone: boolean
}

/**
 * Where the stop path reads rows. On macOS (libproc, the rows findOrphans listed) a handle holds
 * only the pid and a kqueue exit watch, whose exit event reaches JS a moment after the exit: so
 * the start time is also re-read right before each signal (`recheck`). Elsewhere: /proc (or `ps`).
 */
interface StopRows {
  row(pid: number): ProcessRow | null
  table(): ProcessRow[]
  recheck: boolean
}

function stopRows(): StopRows {
  if (process.platform === 'darwin' && darwinProcAvailable()) return { row: darwinProcessRow, table: darwinProcessTable, recheck: true }
  return { row: processRow, table: () => readProcessTable({ commands: false }), recheck: false }
}

/** Pins `pid` if it is still the process that started at `start`; null when it is gone or recycled. */
function pin(pid: number, start: string, rows: StopRows): { pinned: Pinned } | { reason: 'gone' | 'recycled' } {
  // A start time libproc would not give (another user's process, macOS) proves nothing: such a
  // process is never signalled (reported as 'recycled': it cannot be told from one). Never on Linux.
  if (start === '') return { reason: 'recycled' }
  let handle: ProcessHandle
  try {
    handle = openProcess(pid)
  } catch {
    return { reason: 'gone' }
  }
  // Read after the pidfd exists: if the start time still matches, the pidfd names the listed process.
  const row = rows.row(pid)
  if (!row || row.state === 'Z' || row.start !== start) {
    handle.close()
    return { reason: !row || row.state === 'Z' ? 'gone' : 'recycled' }
  }
  const pinned: Pinned = { pid, start, handle, gone: false }
  void handle.exited.then(() => (pinned.gone = true), () => {})
  return { pinned }
}

/** Pins what the pinned processes have started or taken into their groups since the listing. */
function adopt(pinned: Map<number, Pinned>, rows: StopRows): void {
  const table = rows.table()
  const alive = [...pinned.values()].filter((p) => !p.gone).map((p) => p.pid)
  const leads = new Set(alive)
  const found: ProcessRow[] = []
  for (const pid of alive) found.push(...descendantsOf(pid, table))
  for (const row of table) if (leads.has(row.pgid)) found.push(row)
  for (const row of found) {
    if (pinned.has(row.pid) || row.state === 'Z' || row.pid === process.pid) continue
    const r = pin(row.pid, row.start, rows)
    if ('pinned' in r) pinned.set(row.pid, r.pinned)
  }
}

function signalAll(pinned: Map<number, Pinned>, signal: NodeJS.Signals, sent: Set<number>, rows: StopRows): void {
  for (const p of pinned.values()) {
    if (p.gone) continue
    if (rows.recheck) {
      const now = rows.row(p.pid)
      if (!now || now.state === 'Z' || now.start !== p.start) {
        p.gone = true // exited (its exit event may still be on its way): the pid may name another process now
        continue
      }
    }
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
  const rows = stopRows()
  const pinned = new Map<number, Pinned>()
  const skipped: StoppedTree['skipped'] = []
  for (const p of tree.processes) {
    const r = pin(p.pid, p.start, rows)
    if ('pinned' in r) pinned.set(p.pid, r.pinned)
    else skipped.push({ pid: p.pid, reason: r.reason })
  }
  const sent = new Set<number>()
  let escalated = false
  try {
    if (pinned.size > 0) {
      adopt(pinned, rows)
      signalAll(pinned, 'SIGTERM', sent, rows)
      signalAll(pinned, 'SIGCONT', new Set(), rows) // a stopped process can only act on SIGTERM once continued
      if (!(await allGone(pinned, graceMs))) {
        escalated = true
        adopt(pinned, rows) // what it started during the grace goes too
        signalAll(pinned, 'SIGKILL', sent, rows)
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
