/**
 * Loads one of reapkit's parts (dist/cjs/parts/: what require('reapkit') leaves for first use, see
 * scripts/build-parts.mjs), even when this process has run out of file descriptors.
 *
 * A part often loads on the first call of a stop (killProcessGracefully, closeClient), and a stop
 * is what a program calls when things went wrong, out of descriptors included: a stop whose code
 * cannot load would signal nothing at all. Node's require needs one descriptor at a time (it opens,
 * reads and closes each file in turn), so one is kept for it: /dev/null, opened when reapkit loads
 * (close-on-exec, as libuv opens every file), given back for a load that failed with EMFILE or
 * ENFILE, and taken again right after. A worker_thread closes its own when it ends.
 *
 * Only the bundle calls this (the code build-parts.mjs generates); from source, nothing is lazy.
 */
import { closeSync, openSync } from 'node:fs'

const NULL_DEVICE = process.platform === 'win32' ? '\\\\.\\NUL' : '/dev/null'

let spare: number | null = null

function takeSpare(): void {
  try {
    spare = openSync(NULL_DEVICE, 'r')
  } catch {
    spare = null // out of descriptors now: the next load that needs it tries again
  }
}

function giveBackSpare(): void {
  if (spare === null) return
  try {
    closeSync(spare)
  } catch {
    // already closed: nothing to give back
  }
  spare = null
}

// Registered first: a worker terminated between the two statements leaks nothing.
process.once('exit', giveBackSpare)
takeSpare()

/** `load()` (a require of a part), retried with the spare descriptor given back if it ran out of them. */
export function loadPart<T>(load: () => T): T {
  if (spare === null) takeSpare() // lost to a load that found its slot taken: descriptors may be back
  try {
    return load()
  } catch (err) {
    const code = (err as { code?: unknown })?.code
    if ((code !== 'EMFILE' && code !== 'ENFILE') || spare === null) throw err
    giveBackSpare()
    try {
      return load()
    } finally {
      takeSpare()
    }
  }
}
