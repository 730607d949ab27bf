/**
 * Who holds which end of every pipe on the machine, from one pass over /proc/PID/fd and
 * /proc/PID/fdinfo (Linux). The doctor's evidence: a pipe with no writer left can never deliver
 * another byte, and one with no reader left can never be read, whatever the processes are called.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'

/** The processes holding one pipe, by which end they can use. */
export interface PipeHolders {
  readers: Set<number>
  writers: Set<number>
}

/** What one pass found: every pipe's holders, each process's stdin and stdout, who could not be read. */
export interface FdScan {
  pipes: Map<number, PipeHolders>
  /** fd 0 and fd 1 of every readable process: 'pipe:[123]', '/dev/null', 'socket:[9]', or null when closed. */
  stdio: Map<number, { stdin: string | null; stdout: string | null }>
  /** Processes whose fd table could not be read (another user's, without privilege). */
  unreadable: Set<number>
}

const PIPE = /^pipe:\[(\d+)\]$/
const O_ACCMODE = 3
const O_WRONLY = 1
const O_RDWR = 2

function holders(pipes: Map<number, PipeHolders>, inode: number): PipeHolders {
  let h = pipes.get(inode)
  if (!h) {
    h = { readers: new Set(), writers: new Set() }
    pipes.set(inode, h)
  }
  return h
}

/** The access mode of fd `fd` of `pid` (from fdinfo's octal `flags`), or null when it is gone. */
function accessMode(pid: number, fd: string): number | null {
  let info: string
  try {
    info = readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'latin1')
  } catch {
    return null
  }
  const m = /^flags:\s*([0-7]+)/m.exec(info)
  return m ? parseInt(m[1]!, 8) & O_ACCMODE : null
}

/** One pass over the fd tables of `pids` (all of them: a pipe's peer may be anyone's). */
export function scanFds(pids: Iterable<number>): FdScan {
  const pipes = new Map<number, PipeHolders>()
  const stdio = new Map<number, { stdin: string | null; stdout: string | null }>()
  const unreadable = new Set<number>()
  for (const pid of pids) {
    let fds: string[]
    try {
      fds = readdirSync(`/proc/${pid}/fd`)
    } catch (err) {
      // EACCES: another user's process; ENOENT: it exited meanwhile (nothing it held matters now).
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') unreadable.add(pid)
      continue
    }
    let stdin: string | null = null
    let stdout: string | null = null
    for (const fd of fds) {
      let target: string
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`)
      } catch {
        continue // closed meanwhile
      }
      if (fd === '0') stdin = target
      else if (fd === '1') stdout = target
      const m = PIPE.exec(target)
      if (!m) continue
      const mode = accessMode(pid, fd)
      if (mode === null) continue
      const h = holders(pipes, Number(m[1]))
      if (mode === O_WRONLY || mode === O_RDWR) h.writers.add(pid)
      if (mode !== O_WRONLY) h.readers.add(pid)
    }
    stdio.set(pid, { stdin, stdout })
  }
  return { pipes, stdio, unreadable }
}

/** The inode of a 'pipe:[N]' link target, or null. */
export function pipeInode(target: string | null): number | null {
  const m = target === null ? null : PIPE.exec(target)
  return m ? Number(m[1]) : null
}

/** Every fd link target of `pid` (empty when it cannot be read). */
export function fdTargets(pid: number): string[] {
  let fds: string[]
  try {
    fds = readdirSync(`/proc/${pid}/fd`)
  } catch {
    return []
  }
  const out: string[] = []
  for (const fd of fds) {
    try {
      out.push(readlinkSync(`/proc/${pid}/fd/${fd}`))
    } catch {
      // closed meanwhile
    }
  }
  return out
}

/**
 * Listening sockets by inode, from /proc/net/{tcp,tcp6,unix} (this network namespace):
 * 'tcp 127.0.0.1:8080', 'unix /run/x.sock'.
 */
export function listeningSockets(): Map<number, string> {
  const out = new Map<number, string>()
  for (const [file, v6] of [['tcp', false], ['tcp6', true]] as const) {
    let text: string
    try {
      text = readFileSync(`/proc/net/${file}`, 'latin1')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      if (f.length < 10 || f[3] !== '0A') continue // 0A: TCP_LISTEN
      out.set(Number(f[9]), `tcp ${hexAddress(f[1]!, v6)}`)
    }
  }
  let unix = ''
  try {
    unix = readFileSync('/proc/net/unix', 'latin1')
  } catch {
    // no unix sockets table: nothing to add
  }
  for (const line of unix.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/)
    // Num RefCount Protocol Flags Type St Inode [Path]; __SO_ACCEPTCON (0x10000) marks a listener.
    if (f.length < 7 || (parseInt(f[3]!, 16) & 0x10000) === 0) continue
    out.set(Number(f[6]), `unix ${f[7] ?? '(unnamed)'}`)
  }
  return out
}

/** /proc/net/tcp's 'HEXADDR:HEXPORT' (host byte order words) as '127.0.0.1:8080' or '[::1]:8080'. */
function hexAddress(field: string, v6: boolean): string {
  const [addr, port] = field.split(':') as [string, string]
  const p = parseInt(port, 16)
  if (!v6) {
    const b = Buffer.alloc(4)
    b.writeUInt32LE(parseInt(addr, 16) >>> 0)
    return `${b.join('.')}:${p}`
  }
  const b = Buffer.alloc(16)
  for (let i = 0; i < 4; i++) b.writeUInt32LE(parseInt(addr.slice(i * 8, i * 8 + 8), 16) >>> 0, i * 4)
  const words: string[] = []
  for (let i = 0; i < 16; i += 2) words.push(b.readUInt16BE(i).toString(16))
  return `[${words.join(':').replace(/(^|:)0(:0)+(:|$)/, '::')}]:${p}`
}

const SOCKET = /^socket:\[(\d+)\]$/

/** The inode of a 'socket:[N]' link target, or null. */
export function socketInode(target: string | null): number | null {
  const m = target === null ? null : SOCKET.exec(target)
  return m ? Number(m[1]) : null
}

/**
 * Each connected unix socket's peer inode (0 once the peer is gone), by inode; null when it cannot
 * be had. Node's child_process gives stdio 'pipe' as unix socketpairs, not pipes, so a Node host's
 * servers are judged by this. /proc/net/unix does not name peers; the kernel's sock_diag does, and
 * `ss` (iproute2) is its ordinary client: one run lists every unix socket of this network namespace.
 */
export function unixPeers(): Map<number, number> | null {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { spawnSync } = require('node:child_process') as typeof import('node:child_process')
  // From PATH, else where iproute2 installs it (a PATH with node alone, as npm scripts may have).
  let r: import('node:child_process').SpawnSyncReturns<string> | null = null
  for (const ss of ['ss', '/usr/sbin/ss', '/sbin/ss', '/usr/bin/ss', '/bin/ss']) {
    r = spawnSync(ss, ['-x', '-a', '-n'], { encoding: 'latin1', timeout: 10_000, maxBuffer: 256 << 20, env: { ...process.env, LC_ALL: 'C' } })
    if (!(r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT')) break
  }
  if (!r || r.error || r.status !== 0) return null
  const peers = new Map<number, number>()
  for (const line of r.stdout.split('\n')) {
    // Netid State Recv-Q Send-Q Local-Address Local-Port Peer-Address Peer-Port
    const f = line.trim().split(/\s+/)
    if (f.length < 8 || !f[0]!.startsWith('u_')) continue
    const local = f[f.length - 3]!
    const peer = f[f.length - 1]!
    if (!/^\d+$/.test(local) || !/^\d+$/.test(peer)) continue
    peers.set(Number(local), Number(peer))
  }
  return peers
}

/**
 * fd 0 and fd 1 of `pid` when both are pipes or sockets (the only stdio that can lose a host), else
 * null; 'unreadable' when its fd table is closed to us (another user's process, without privilege).
 * Two readlinks: the whole cost, per process, of a listing on Linux when the kernel probe is there.
 */
export function pipeOrSocketStdio(pid: number): { stdin: string; stdout: string } | null | 'unreadable' {
  let stdin: string
  try {
    stdin = readlinkSync(`/proc/${pid}/fd/0`)
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EACCES' ? 'unreadable' : null
  }
  if (!stdin.startsWith('pipe:') && !stdin.startsWith('socket:')) return null
  let stdout: string
  try {
    stdout = readlinkSync(`/proc/${pid}/fd/1`)
  } catch {
    return null
  }
  if (!stdout.startsWith('pipe:') && !stdout.startsWith('socket:')) return null
  return { stdin, stdout }
}
