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
 * Each copy of reapkit loads parts of its own. A test runner that resets its registry
 * (jest.resetModules, decache) leaves the copy loaded before in use while a fresh index.js takes its
 * place in require's cache: a part of the first copy must still reach that copy's modules (its exit
 * watcher, its spawn registry), not whichever index.js is cached. So the copy's internals are
 * handed to the part while it loads (under Symbol.for('reapkit.loadingInternals'), read by the
 * parts' internals chunk before it falls back to require('../index.js')), and each copy keeps the
 * parts' modules it loaded: while it loads another, require's cache holds its own parts and chunks
 * (the other copies' are put back after), so two copies never share a part, nor a chunk's state.
 *
 * Only the bundle calls loadPart (the code build-parts.mjs generates); from source, nothing is lazy.
 * The addon, which loads on first use from source too (native.ts), uses the same spare descriptor
 * (withSpareDescriptor).
 */
import { closeSync, openSync } from 'node:fs'
import { join, sep } from 'node:path'

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
  if (spare.fd !== null) return // held already (a load within a load took it back first)
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

const LOADING = Symbol.for('reapkit.loadingInternals')
let internals: unknown
let partsDir: string | undefined
let loading = false
/** The modules of dist/cjs/parts/ this copy loaded, by file name. */
const ownParts = new Map<string, NodeJS.Module>()

/** What this copy hands its parts (index.js's Symbol.for('reapkit.internals')); set once it has run. */
export function bindInternals(value: unknown): void {
  internals = value
}

/** `load()` with this copy's parts in require's cache and its internals handed over, then put back. */
function asThisCopy<T>(load: () => T): T {
  if (loading) return load() // a part that loads another as it loads: the cache is this copy's already
  const cache = require.cache
  const dir = (partsDir ??= join(__dirname, 'parts') + sep)
  const others: Array<[string, NodeJS.Module | undefined]> = []
  for (const key of Object.keys(cache)) {
    if (key.startsWith(dir) && cache[key] !== ownParts.get(key)) {
      others.push([key, cache[key]])
      delete cache[key]
    }
  }
  for (const [key, mod] of ownParts) cache[key] = mod
  const global = globalThis as unknown as Record<symbol, unknown>
  const before = global[LOADING]
  global[LOADING] = internals
  loading = true
  try {
    return load()
  } finally {
    loading = false
    global[LOADING] = before
    for (const key of Object.keys(cache)) {
      const mod = cache[key]
      if (key.startsWith(dir) && mod) ownParts.set(key, mod)
    }
    for (const [key, mod] of others) cache[key] = mod
  }
}

/** `load()` (a require of a part), retried with the spare descriptor given back if it ran out of them. */
export function loadPart<T>(load: () => T): T {
  return asThisCopy(() => loadWithSpare(load))
}

function loadWithSpare<T>(load: () => T): T {
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

/**
 * `load()`, run once more with the spare descriptor given back if it failed, whatever the error:
 * native.ts loads the addon so, and dlopen says it ran out of descriptors in dlerror's words (each
 * platform its own), not with an EMFILE code. The second attempt's outcome is the answer.
 */
export function withSpareDescriptor<T>(load: () => T): T {
  if (spare.fd === null) take(spare)
  try {
    return load()
  } catch (err) {
    if (spare.fd === null) throw err
    giveBack(spare)
    try {
      return load()
    } finally {
      take(spare)
    }
  }
}
