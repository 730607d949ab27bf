/**
 * Where `reapkit doctor` reads a platform (lib/policies/doctor/doctor.ts builds the trees from this alike
 * everywhere). Linux: /proc, with the kernel's own word on each stdio pipe (native/pipe_probe.cc)
 * and sock_diag's on sockets. macOS (compile-checked only, never run here): libproc in the addon
 * (native/proc_darwin.cc), the kernel's peer handle of each pipe end and unix socket.
 */
import { readFileSync, readlinkSync, statSync } from 'node:fs'
import { nativeBinding } from '../../ground/native'
import { commandOf, processRow, type ProcessRow, readProcessTable } from '../../mechanisms/proctable'
import { fdTargets, listeningSockets, pipeInode, pipeOrSocketStdio, scanFds, socketInode, unixPeers } from '../../mechanisms/pipes'
import { darwinCommandOf, darwinLostHost, darwinProcessRow, darwinProcessTable, type DarwinRow, darwinStdioNames } from '../../mechanisms/proctable-darwin'

/**
 * What findOrphans needs from a platform: its process table, which processes lost their host (the
 * criterion, read where the platform keeps it), and the details of the rows it lists. The trees
 * and the leftovers are built from this alike on every platform.
 */
export interface ProcView {
  table: ProcessRow[]
  byPid: Map<number, ProcessRow>
  /** pid -> why it lost its host (the dead pipes or sockets); fd tables that could not be read. */
  candidates(exempt: Set<number>, mine: (pid: number) => boolean): { evidence: Map<number, string>; unreadable: number }
  uid(pid: number): number
  /** Its session id; 0 when unknown. */
  sid(pid: number): number
  rssBytes(pid: number): number
  command(row: ProcessRow): string
  stdioNames(pid: number): { stdin: string; stdout: string }
  /** Listening sockets (with `withSockets`) and files under `paths` that `row` keeps open. */
  holds(row: ProcessRow, paths: string[], withSockets: boolean): string[]
  row(pid: number): ProcessRow | null
}

const PAGE = 4096

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
  return nativeBinding()?.pipePeerAlive(pid, fd, fd === 0) === true
}

/** Linux: /proc, with the kernel's word on each pipe (pipePeerAlive) and sock_diag's on sockets. */
export function linuxView(): ProcView {
  const table = readProcessTable({ commands: false })
  const byPid = new Map(table.map((r) => [r.pid, r]))
  let sockets: Map<number, string> | undefined
  return {
    table,
    byPid,
    candidates: (exempt, mine) => linuxCandidates(byPid, exempt, mine),
    uid: uidOf,
    sid: (pid) => statExtra(pid).sid,
    rssBytes: (pid) => statExtra(pid).rssBytes,
    command: (row) => commandOf(row.pid) ?? row.command,
    stdioNames: stdioLinks,
    holds(row, paths, withSockets) {
      const listening = withSockets ? (sockets ??= listeningSockets()) : new Map<number, string>()
      const holds: string[] = []
      if (listening.size > 0 || paths.length > 0) {
        for (const target of fdTargets(row.pid)) {
          const sock = /^socket:\[(\d+)\]$/.exec(target)
          const found = sock ? listening.get(Number(sock[1])) : undefined
          if (found) holds.push(found)
          else if (paths.some((p) => target === p || target.startsWith(p === '/' ? '/' : `${p}/`))) holds.push(target)
        }
      }
      return holds
    },
    row: processRow,
  }
}

function linuxCandidates(byPid: Map<number, ProcessRow>, exempt: Set<number>, mine: (pid: number) => boolean): { evidence: Map<number, string>; unreadable: number } {
  // With the addon, the kernel answers for each pipe (pipePeerAlive), so only fds 0 and 1 need
  // reading; without it, one pass over every process's fds and fdinfo says who holds which end.
  const scan = nativeBinding() ? null : scanFds(byPid.keys())
  let unreadable = scan?.unreadable.size ?? 0

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
  return { evidence, unreadable }
}

/**
 * macOS: libproc (native/proc_darwin.cc). The kernel says of each pipe end and unix stream socket
 * whether its peer is closed for good, so there is no scan and no `ss`: a pipe read end whose
 * write end is gone has no writer, a write end whose read end is gone has no reader. Not read
 * here yet: `holds` (listening sockets, open files), left empty.
 */
export function darwinView(): ProcView {
  const table: DarwinRow[] = darwinProcessTable()
  const byPid = new Map<number, ProcessRow>(table.map((r) => [r.pid, r]))
  const uids = new Map(table.map((r) => [r.pid, r.uid]))
  return {
    table,
    byPid,
    candidates: (exempt, mine) => darwinLostHost(byPid.keys(), exempt, mine),
    uid: (pid) => uids.get(pid) ?? -1,
    sid: (pid) => darwinProcessRow(pid)?.sid ?? 0,
    rssBytes: (pid) => darwinProcessRow(pid)?.rssBytes ?? 0,
    command: (row) => darwinCommandOf(row.pid) ?? row.command,
    stdioNames: darwinStdioNames,
    holds: () => [],
    row: darwinProcessRow,
  }
}
