/**
 * What the control socket's server (control.ts) and its client (lib/cli/control-client.ts) share:
 * the trust rules of the socket's folder and the shape of a `ps` row. Nothing here loads the addon,
 * so the client bundle stays small.
 */
import { rangeError } from '../../ground/errors'
import type { TrustedFile } from '../state-file-trust'

export const CONTROL_SOCKET: TrustedFile = {
  what: 'the control socket',
  code: 'ERR_REAPKIT_CONTROL_SOCKET_UNSAFE',
  why: 'A control socket stops and restarts children, so only this user (or root) may be able to write its folders; choose a path beside the state file, in a folder of your own (e.g. mode 0700)',
  maxBytes: 0,
  stickyFolder: false,
}

/**
 * The longest path a Unix socket can have: sun_path's size less its NUL (108 bytes on Linux, 104 on
 * macOS and the BSDs). Node cuts a longer one silently: the socket would be made at the cut name.
 */
export const SOCKET_PATH_MAX = process.platform === 'linux' ? 107 : 103

/** A RangeError (before any syscall) for a socket path longer than SOCKET_PATH_MAX bytes. */
export function checkSocketPathLength(path: string): void {
  const n = Buffer.byteLength(path)
  if (n > SOCKET_PATH_MAX) {
    throw rangeError('ERR_OUT_OF_RANGE', `The control socket path is ${n} bytes; a Unix socket path can be at most ${SOCKET_PATH_MAX} bytes here: choose a shorter one (${JSON.stringify(path)})`)
  }
}

/** One row of `reapkit ps`. */
export interface ControlRow {
  /** How the CLI names it: its request id, or its pid when it has none. */
  id: string | number
  requestId: string | number | null
  pid: number
  status: string
  command: string
  startedAt: string
  /** Since its newest incarnation started; null when none runs (over, or waiting to restart). */
  uptimeMs: number | null
  restarts: number
  /** CPU time its leader used (user + system), ms; null when unknown (over, or not Linux). */
  cpuMs: number | null
  rssBytes: number | null
  /** Its readiness, when the supervisor keeps one; null otherwise. */
  ready: boolean | null
  /** A `reapkit stop` or `restart` of it is under way. */
  stopping: boolean
}

/** The answer to `ps` (and each frame of `top`). */
export interface ControlSnapshot {
  /** The host's drain state, when it gave the socket one (a keepalive's: 'running', 'draining', ...); else '-'. */
  drain: string
  at: string
  processes: ControlRow[]
}
