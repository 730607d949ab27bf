/**
 * The client side of a Supervisor's control socket (lib/policies/supervisor/control.ts): finds the
 * socket, checks that it is this user's before a byte is sent (a socket another user made could
 * answer anything, or collect what we ask), and exchanges JSON lines with it. Every wait bounded.
 */
import { lstatSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { checkStateFolder } from '../policies/state-file-trust'
import { CONTROL_SOCKET, checkSocketPathLength } from '../policies/supervisor/control-wire'

export class ControlError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message)
  }
}

/** How long a request may take to be answered (a `stop` waits out the child's grace: generous). */
export const ANSWER_TIMEOUT_MS = 60_000
const CONNECT_TIMEOUT_MS = 5000

/**
 * The socket at `path`, checked: its folders by the state file's rules, and the file itself a socket
 * owned by this user (lstat: a symlink at the name is refused). Returns the path through its real folder.
 */
export function trustedSocket(path: string): string {
  checkSocketPathLength(path)
  const real = checkStateFolder(path, CONTROL_SOCKET)
  checkSocketPathLength(real) // through its real folder, which may be longer
  let st
  try {
    st = lstatSync(real)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'EIO'
    throw new ControlError(code === 'ENOENT' ? `no control socket at ${path} (is the supervisor running with one?)` : `${path}: ${code}`, code)
  }
  if (!st.isSocket()) throw new ControlError(`Refusing ${path}: it is not a socket`, CONTROL_SOCKET.code)
  const me = process.geteuid?.() ?? 0
  if (st.uid !== me) throw new ControlError(`Refusing ${path}: it belongs to uid ${st.uid}, not to you (uid ${me})`, CONTROL_SOCKET.code)
  return real
}

/**
 * Sends one request and calls `onLine` with each JSON line of the answer until the server ends it.
 * `timeoutMs` bounds the whole exchange (0: unbounded, for `logs -f`, which ends with the child or a
 * signal).
 */
export function exchange(path: string, request: object, onLine: (v: Record<string, unknown>) => void, timeoutMs = ANSWER_TIMEOUT_MS): { done: Promise<void>; socket: Socket } {
  const socket = connect(trustedSocket(path))
  const done = new Promise<void>((resolve, reject) => {
    let buf = ''
    const connectTimer = setTimeout(() => fail(new ControlError(`${path}: no answer to connect within ${CONNECT_TIMEOUT_MS} ms`, 'ETIMEDOUT')), CONNECT_TIMEOUT_MS)
    const answerTimer = timeoutMs > 0 ? setTimeout(() => fail(new ControlError(`${path}: no complete answer within ${timeoutMs} ms`, 'ETIMEDOUT')), timeoutMs) : null
    const fail = (err: Error): void => {
      clearTimeout(connectTimer)
      if (answerTimer) clearTimeout(answerTimer)
      socket.destroy()
      reject(err)
    }
    socket.once('connect', () => {
      clearTimeout(connectTimer)
      socket.write(`${JSON.stringify(request)}\n`)
    })
    socket.on('data', (d: Buffer) => {
      buf += d.toString('utf8')
      let nl
      while ((nl = buf.indexOf('\n')) >= 0) {
        const text = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        try {
          onLine(JSON.parse(text) as Record<string, unknown>)
        } catch (err) {
          return fail(err instanceof ControlError ? err : new ControlError(`bad answer from ${path}: ${(err as Error).message}`, 'EPROTO'))
        }
      }
    })
    socket.once('error', (err: NodeJS.ErrnoException) => fail(new ControlError(`${path}: ${err.code === 'ECONNREFUSED' ? 'no supervisor listens there (a socket left by one that died)' : err.message}`, err.code ?? 'EIO')))
    socket.once('close', () => {
      clearTimeout(connectTimer)
      if (answerTimer) clearTimeout(answerTimer)
      resolve()
    })
  })
  return { done, socket }
}

/** One request whose answer is one line: that line, or a ControlError for `ok: false`. */
export async function ask(path: string, request: object): Promise<Record<string, unknown>> {
  let answer: Record<string, unknown> | null = null
  await exchange(path, request, (v) => (answer ??= v)).done
  if (answer === null) throw new ControlError(`${path}: the supervisor closed the connection without an answer`, 'EPROTO')
  const a = answer as Record<string, unknown>
  if (a.ok !== true) throw new ControlError(String(a.message ?? 'refused'), String(a.code ?? 'ERR_REAPKIT_CONTROL'))
  return a
}
