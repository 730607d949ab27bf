/**
 * Node's own child_process.spawn, held from the moment reapkit loads.
 *
 * reapkit's spawn() is a drop-in, and the usual way to swap a drop-in in (a preload, a test setup,
 * a tool that patches Node) is `child_process.spawn = reapkit.spawn`. A spawn() that looked
 * `child_process.spawn` up when called would then call itself until the stack overflowed, leaving
 * the report pipes of every round open (issue 32). Taken once, here, no later assignment can
 * replace it. What was there before reapkit loaded is what reapkit uses: a wrapper installed earlier
 * (an instrumentation, a mock) stays in the path, as it would for any caller.
 *
 * The price: node:child_process (and the streams and net it stands on) loads with reapkit, about
 * 1.7 ms of require('reapkit') on the bench machine (bench/require.mjs measures it beside the
 * one-line-module floor). Nothing cheaper holds the original: a lazy look-up at the first spawn
 * may already find the patch, since the patch needs reapkit loaded first.
 */
import type { spawn as NodeSpawn } from 'node:child_process'

export type SpawnFunction = typeof NodeSpawn

// A plain require, read once: an ESM named import would be a live binding (esbuild reads the
// property at each call), which is exactly what a later patch replaces.
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const nodeSpawn: SpawnFunction = (require('node:child_process') as typeof import('node:child_process')).spawn
