/**
 * The child_process.spawn reapkit's spawn() calls: whatever `child_process.spawn` is at the call, so
 * a wrapper installed before or after reapkit loads (a test's spy, a fault injection, an
 * instrumentation) stays in the path, as it would for any caller; and Node's own, held from the
 * moment reapkit loads, wherever that look-up would come back to reapkit.
 *
 * reapkit's spawn() is a drop-in, and the usual way to swap a drop-in in (a preload, a test setup,
 * a tool that patches Node) is `child_process.spawn = reapkit.spawn`, or a wrapper that ends in
 * reapkit.spawn. Calling that from spawn() would call spawn() again until the stack overflowed,
 * leaving the report pipes of every round open (issue 32). So the call through the looked-up
 * function counts as a depth, shared by every copy of reapkit in the process (a test runner may
 * hold several): a reapkit spawn() entered while one is under way (`spawnReentered()`) hands its
 * arguments to the held function straight away, and that one returns what Node's spawn made to
 * the outer spawn(), which does the rest once. A wrapper runs once per spawn, as for any caller.
 *
 * The price: node:child_process (and the streams and net it stands on) loads with reapkit, about
 * 1.7 ms of require('reapkit') on the bench machine (bench/require.mjs measures it beside the
 * one-line-module floor): nothing later could hold the original, since a patch may come first.
 * Taking it at the first spawn when nothing had loaded child_process by require time fails the
 * usual preload, `const r = require('reapkit'); require('child_process').spawn = r.spawn`: Node's
 * own is then referenced by nothing public (fork and execFile close over it, each with its own
 * argument handling), so it cannot be recovered (test/spawn-patched.test.ts, 'first').
 */
import type { spawn as NodeSpawn } from 'node:child_process'

export type SpawnFunction = typeof NodeSpawn

// A plain require: the module object, whose `spawn` property a patch replaces (an ESM named import
// would bind to it just as live, but esbuild's interop is easier to reason about this way).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const childProcess = require('node:child_process') as typeof import('node:child_process')

/** What child_process.spawn was when reapkit loaded (Node's own, or a wrapper installed before). */
const heldSpawn: SpawnFunction = childProcess.spawn

interface Depth {
  calls: number
}

function sharedDepth(): Depth {
  const key = Symbol.for('reapkit.spawnDepth.v1')
  const global = globalThis as unknown as Record<symbol, Depth | undefined>
  const found = global[key]
  if (found) return found
  const fresh: Depth = { calls: 0 }
  Object.defineProperty(globalThis, key, { value: fresh, enumerable: false })
  return fresh
}

const depth = sharedDepth()

/** True while a call through the looked-up child_process.spawn is under way (in any copy of reapkit). */
export function spawnReentered(): boolean {
  return depth.calls > 0
}

/** Spawns through child_process.spawn as it is now, or through the held one when that would recurse. */
export const nodeSpawn: SpawnFunction = function nodeSpawn(this: unknown, ...args: unknown[]) {
  const current = childProcess.spawn
  if (depth.calls > 0 || typeof current !== 'function' || current === heldSpawn) {
    return (heldSpawn as (...a: unknown[]) => ReturnType<SpawnFunction>).apply(childProcess, args)
  }
  depth.calls++
  try {
    return (current as (...a: unknown[]) => ReturnType<SpawnFunction>).apply(childProcess, args)
  } finally {
    depth.calls--
  }
} as SpawnFunction

/** For a reapkit spawn() entered from within nodeSpawn(): Node's spawn, held, with its arguments as given. */
export function heldNodeSpawn(args: ArrayLike<unknown>): ReturnType<SpawnFunction> {
  return (heldSpawn as (...a: unknown[]) => ReturnType<SpawnFunction>).apply(childProcess, Array.from(args))
}
