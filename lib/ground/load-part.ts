/**
 * Loads one of reapkit's parts (dist/cjs/parts/: what require('reapkit') leaves for first use, see
 * scripts/build-parts.mjs), even when this process has run out of file descriptors.
 *
 * A part often loads on the first call of a stop (killProcessGracefully, closeClient), and a stop
 * is what a program calls when things went wrong, out of descriptors included: a stop whose code
 * cannot load would signal nothing at all. Node's require needs one descriptor at a time (it opens,
 * reads and closes each file in turn), so one is kept for it: /dev/null, opened when reapkit loads
 * (close-on-exec, as libuv opens every file), given back for a load that failed with EMFILE or
 * ENFILE, and taken again right after. One per process (per worker_thread, which closes its own
 * when it ends), shared by every copy of reapkit loaded in it: a test runner that loads reapkit
 * afresh for each test file holds one descriptor, not one per file.
 *
 * Only the bundle calls this (the code build-parts.mjs generates); from source, nothing is lazy.
 */
import { closeSync, openSync } from 'node:fs'

const NULL_DEVICE = process.platform === 'win32' ? '\\\\.\\NUL' : '/dev/null'

interface Spare {
  fd: number | null
}

function sharedSpare(): Spare {
  const key = Symbol.for('reapkit.partsSpareDescriptor.v1')
  const global = globalThis as unknown as Record<symbol, Spare | undefined>
  const found = global[key]
  if (found) return found
  const fresh: Spare = { fd: null }
  Object.defineProperty(globalThis, key, { value: fresh, enumerable: false })
  // Registered before the descriptor is taken: a worker terminated in between leaks nothing.
  process.once('exit', () => giveBack(fresh))
  take(fresh)
  return fresh
}

function take(spare: Spare): void {
  try {
    spare.fd = openSync(NULL_DEVICE, 'r')
  } catch {
    spare.fd = null // out of descriptors now: the next load that needs it tries again
  }
}

function giveBack(spare: Spare): void {
  if (spare.fd === null) return
  try {
    closeSync(spare.fd)
  } catch {
    // already closed: nothing to give back
  }
  spare.fd = null
}

const spare = sharedSpare()

/** `load()` (a require of a part), retried with the spare descriptor given back if it ran out of them. */
export function loadPart<T>(load: () => T): T {
  if (spare.fd === null) take(spare) // lost to a load that found its slot taken: descriptors may be back
  try {
    return load()
  } catch (err) {
    const code = (err as { code?: unknown })?.code
    if ((code !== 'EMFILE' && code !== 'ENFILE') || spare.fd === null) throw err
    giveBack(spare)
    try {
      return load()
    } finally {
      take(spare)
    }
  }
}
