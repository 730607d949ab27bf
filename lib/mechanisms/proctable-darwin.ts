/**
 * The process table and the stdio peers of processes on macOS, through libproc in the addon
 * (native/proc_darwin.cc): `reapkit doctor`'s view of macOS, as /proc is its view of Linux. Compile-
 * checked on Linux only (test/native-build.test.ts); never run on macOS by this project's tests.
 */
import { nativeBinding, type DarwinFd, type DarwinProcRow } from '../ground/native'
import type { ProcessRow } from './proctable'

/** A ProcessRow with the owner's uid, which libproc gives with the row. */
export interface DarwinRow extends ProcessRow {
  uid: number
}

/** Whether this is macOS and the addon has the libproc functions. */
export function darwinProcAvailable(): boolean {
  if (process.platform !== 'darwin') return false
  const binding = nativeBinding()
  return typeof binding?.darwinProcesses === 'function' && typeof binding.darwinProcess === 'function' && typeof binding.darwinStdio === 'function'
}

// p_stat (bsd/sys/proc.h) as the one-letter states of ProcessRow: SIDL, SRUN, SSLEEP, SSTOP, SZOMB.
const STATES = ['?', 'I', 'R', 'S', 'T', 'Z']

function toRow(r: DarwinProcRow, nowMs: number): DarwinRow {
  const known = r.startSec >= 0
  const startMs = r.startSec * 1000 + r.startUsec / 1000
  return {
    pid: r.pid,
    ppid: r.ppid,
    pgid: r.pgid,
    state: STATES[r.status] ?? '?',
    // Seconds and microseconds since the epoch (pbi_start_tvsec/usec): with the pid, names this
    // process exactly. Empty when libproc would not say (another user's process, without root).
    start: known ? `${r.startSec}.${String(r.startUsec).padStart(6, '0')}` : '',
    ageMs: known ? Math.max(0, Math.round(nowMs - startMs)) : 0,
    command: `[${r.comm}]`,
    uid: r.uid,
  }
}

/** Every process now (commands are names in brackets; darwinCommandOf for the few that matter). */
export function darwinProcessTable(): DarwinRow[] {
  const now = Date.now()
  return nativeBinding()!.darwinProcesses!().map((r) => toRow(r, now))
}

/**
 * One process, with its session id and resident memory; null when there is no such process, or
 * when libproc will not describe it (then nothing may be signalled on its account either).
 */
export function darwinProcessRow(pid: number): (DarwinRow & { sid: number; rssBytes: number }) | null {
  let r: (DarwinProcRow & { sid: number; rssBytes: number }) | null
  try {
    r = nativeBinding()!.darwinProcess!(pid)
  } catch {
    return null
  }
  return r ? { ...toRow(r, Date.now()), sid: r.sid, rssBytes: r.rssBytes } : null
}

/** fds 0 and 1 of `pid`; 'unreadable' for another user's process, null when it is gone. */
export function darwinStdio(pid: number): [DarwinFd, DarwinFd] | 'unreadable' | null {
  try {
    return nativeBinding()!.darwinStdio!(pid)
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'ESRCH') return null
    if (code === 'EPERM' || code === 'EACCES') return 'unreadable'
    throw err
  }
}

/** How a listing names an fd: 'pipe:[<handle>]', 'socket:[<handle>]', '(closed)', '(not a pipe or socket)'. */
export function darwinFdName(fd: DarwinFd): string {
  if (fd.kind === 'pipe' || fd.kind === 'socket') return `${fd.kind}:[${fd.id}]`
  return fd.kind === 'closed' ? '(closed)' : '(not a pipe or socket)'
}

/** The command line of `pid` as `ps` shows it (KERN_PROCARGS2), or null when it has none or is gone. */
export function darwinCommandOf(pid: number): string | null {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { spawnSync } = require('node:child_process') as typeof import('node:child_process') // listed rows only
  const r = spawnSync('ps', ['-o', 'command=', '-p', String(pid)], {
    encoding: 'utf8',
    timeout: 5000,
    env: { ...process.env, LC_ALL: 'C' },
  })
  if (r.error || r.status !== 0) return null
  return r.stdout.trim() || null
}

/** fds 0 and 1 of `pid` by name, for a listing. */
export function darwinStdioNames(pid: number): { stdin: string; stdout: string } {
  const io = darwinStdio(pid)
  if (io === null || io === 'unreadable') return { stdin: `(${io ?? 'gone'})`, stdout: `(${io ?? 'gone'})` }
  return { stdin: darwinFdName(io[0]), stdout: darwinFdName(io[1]) }
}

/**
 * The doctor's criterion on macOS, from the kernel's own peer handles (no scan, no `ss`): among
 * `pids` (less `exempt`, only those `mine` accepts), the processes whose stdin can bring nothing
 * more (a pipe read end whose write end is closed everywhere, or a unix stream socket whose peer
 * is gone) AND whose stdout reaches nobody (a pipe write end whose read end is closed everywhere,
 * or such a socket), each with why; and how many fd tables could not be read (other users').
 */
export function darwinLostHost(pids: Iterable<number>, exempt: Set<number>, mine: (pid: number) => boolean): { evidence: Map<number, string>; unreadable: number } {
  const evidence = new Map<number, string>()
  let unreadable = 0
  for (const pid of pids) {
    if (exempt.has(pid)) continue
    const io = darwinStdio(pid)
    if (io === 'unreadable') unreadable++
    if (io === null || io === 'unreadable') continue
    const [stdin, stdout] = io
    // A pipe fd is one end (FREAD or FWRITE): stdin must be a read end, stdout a write end (a
    // process holding the other end is itself the writer, or the reader).
    const inGone = stdin.kind === 'pipe' ? stdin.read && !stdin.write && stdin.peerGone : stdin.kind === 'socket' && stdin.peerGone
    const outGone = stdout.kind === 'pipe' ? stdout.write && !stdout.read && stdout.peerGone : stdout.kind === 'socket' && stdout.peerGone
    if (!inGone || !outGone || !mine(pid)) continue
    evidence.set(pid, `stdin ${darwinFdName(stdin)} has no ${stdin.kind === 'pipe' ? 'writer' : 'peer'}; stdout ${darwinFdName(stdout)} has no ${stdout.kind === 'pipe' ? 'reader' : 'peer'}`)
  }
  return { evidence, unreadable }
}
