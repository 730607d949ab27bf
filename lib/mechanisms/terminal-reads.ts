/**
 * While a child of ours is the terminal's foreground job, this process's own reads of the terminal
 * wait, as a shell's do (issue 32 item 3).
 *
 * Handing the terminal to the child (terminal.ts) puts this process in a background group. A read
 * of the terminal from there is refused by the kernel: with SIGTTIN, which stops this process, when
 * its group has a parent in another group of the session (under a shell: the shell reports the
 * host "Stopped" and takes the terminal from the child too), or with EIO when its group is orphaned
 * (the host leads its own session, as under `script -c`, an IDE's terminal, a container's `-t`):
 * Node's stdin then emits an unhandled `Error: read EIO` and the host exits 1. With Node's spawn
 * the child stays in the host's group and both read; whoever reads first gets the line.
 *
 * A shell never reads while a foreground job runs: it waits for the job, and reads again once the
 * terminal is back. So do we, for Node's terminal streams (tty.ReadStream: process.stdin and any
 * other on the same terminal): while the job holds the terminal, one that is reading stops reading
 * (libuv's readStop, the stream left as it is: nothing is lost, nothing is emitted), and one that
 * starts reading waits; both read again when the terminal comes back to our group (the job exited
 * or stopped). Typed input stays in the terminal's buffer meanwhile, for whoever reads first: the
 * job, as in a shell.
 *
 * Two hooks, installed at the first hand-over, never at load: `tty.ReadStream.prototype._read`
 * (a stream that starts reading during the job), and `process._getActiveHandles()` to find the
 * streams already reading (Node has no public list). That list holds ref'd handles only, so
 * process.stdin is also looked at directly (an unref'd stdin that reads: it crashed with EIO too);
 * another tty.ReadStream that is unref'd and reading is not found, and is not held.
 */
import { fstatSync, readFileSync } from 'node:fs'
import type { ReadStream } from 'node:tty'

/** The parts of a tty.ReadStream's libuv handle used here. */
interface TtyHandle {
  fd?: number
  reading?: boolean
  readStop?: () => number
}
type TerminalStream = ReadStream & { _handle?: TtyHandle | null; _read(n: number): void }

let terminalFd: number | null = null
const waiting = new Set<TerminalStream>()
let originalRead: ((this: TerminalStream, n: number) => void) | null = null

function ttyModule(): typeof import('node:tty') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('node:tty') as typeof import('node:tty')
}

/** Whether `stream` reads the terminal at `fd` (the same device; libuv may read it through a reopened descriptor). */
function onTerminal(stream: TerminalStream, fd: number): boolean {
  const own = stream._handle?.fd
  if (typeof own !== 'number' || own < 0) return false
  try {
    return fstatSync(own).rdev === fstatSync(fd).rdev
  } catch {
    return false
  }
}

function installReadHook(): void {
  if (originalRead) return
  const proto = ttyModule().ReadStream.prototype as unknown as TerminalStream
  const original = proto._read
  originalRead = original
  proto._read = function heldRead(this: TerminalStream, n: number): void {
    if (terminalFd !== null && onTerminal(this, terminalFd)) {
      waiting.add(this) // its read starts once the terminal is ours again
      return
    }
    original.call(this, n)
  }
}

/**
 * Whether this process has created process.stdin. Node keeps it in its getter's closure, with no
 * flag to read, and creating it has effects (libuv reopens the terminal on fd 0, non-blocking, for
 * the children we start too), so the getter is touched only once it is known to exist. On Linux,
 * fd 0's flags tell: libuv sets O_NONBLOCK on the terminal it reopens there, and nothing else in
 * Node does. They tell only before a child is started: a child that inherits fd 0 clears the flag
 * (libuv, in the child, on the description it shares with us), so noteCreatedStdin() looks before
 * the spawn, and what it saw stays true (Node never drops process.stdin). Elsewhere: never known.
 */
let stdinCreated = false

export function noteCreatedStdin(): void {
  if (stdinCreated || process.platform !== 'linux') return
  try {
    const flags = /^flags:\s*([0-7]+)$/m.exec(readFileSync('/proc/self/fdinfo/0', 'utf8'))
    stdinCreated = flags !== null && (parseInt(flags[1]!, 8) & 0o4000) !== 0
  } catch {
    // no /proc: not known
  }
}

let warnedNoList = false

/** The handles that may be terminal streams already reading: Node's list of ref'd handles, and process.stdin. */
function candidates(): unknown[] {
  const list = (process as unknown as { _getActiveHandles?: unknown })._getActiveHandles
  let found: unknown[] = []
  if (typeof list === 'function') found = [...(list.call(process) as unknown[])]
  else if (!warnedNoList) {
    warnedNoList = true
    process.emitWarning(
      "process._getActiveHandles() is not a function here: while a child holds the terminal, reapkit holds the reads of process.stdin only, not those of another tty.ReadStream that is already reading",
      { code: 'REAPKIT_TERMINAL_READS' },
    )
  }
  if (stdinCreated && !found.includes(process.stdin)) found.push(process.stdin)
  return found
}

/** The terminal at `fd` went to a job of ours: our reads of it wait until releaseTerminalReads(). */
export function holdTerminalReads(fd: number): void {
  installReadHook()
  terminalFd = fd
  const { ReadStream } = ttyModule()
  for (const handle of candidates()) {
    const stream = handle as TerminalStream
    if (!(handle instanceof ReadStream) || !stream._handle?.reading || !onTerminal(stream, fd)) continue
    stream._handle.reading = false
    stream._handle.readStop?.()
    waiting.add(stream)
  }
}

/**
 * Whether the owner of a held stream still wants it read. One paused (`pause()`, as readline's
 * close() does) or never given a consumer does not: Node stops process.stdin's read one tick after
 * pause(), so a hand-over in the same tick found it still reading, held it, and Node's own stop
 * then found nothing to stop. A consumer of 'readable' reads with read() and never flows.
 */
function stillWanted(stream: TerminalStream): boolean {
  if (stream.destroyed || !stream._handle || stream.readableEnded) return false
  return stream.readableFlowing === true || stream.listenerCount('readable') > 0
}

/** The terminal is ours again (or gone): the held streams read again, those their owner still reads. */
export function releaseTerminalReads(): void {
  if (terminalFd === null) return
  terminalFd = null
  for (const stream of [...waiting]) {
    waiting.delete(stream)
    if (stream._handle?.reading) continue
    if (stillWanted(stream)) {
      originalRead!.call(stream, stream.readableHighWaterMark)
    } else {
      // Left stopped, as Node's pause leaves it; no read is under way, so a later resume() or
      // read() calls _read again (while `reading` is set, Node never would).
      ;(stream as unknown as { _readableState: { reading: boolean } })._readableState.reading = false
    }
  }
}
