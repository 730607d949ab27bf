/**
 * A child's incarnations: how a child is registered, and the steps every incarnation goes through
 * once it runs (the first one and each restart alike). A new thing to do for every running
 * incarnation is one more named step in INCARNATION_STEPS, not a branch elsewhere.
 */
import type { ChildProcess } from 'node:child_process'
import { logEvent } from '../../ground/logger'
import type { ProcessHandle } from '../../mechanisms/handle'
import { spawnedInfo, trackChild } from '../../mechanisms/spawn'
import type { Core } from './core'
import { startHealthChecks } from './health-watch'
import { copyRecord, newRecord, type ProcessRecord } from './record'
import type { Entry } from './registry'

/** One step for a running incarnation (`entry.child` is it). */
export type IncarnationStep = (core: Core, entry: Entry, spawnedWithToken: boolean) => void

/** With a stateFile: the incarnation goes in it (a crash must not hide it from the next supervisor). */
const recordInState: IncarnationStep = (core, { child, record }, spawnedWithToken) => {
  core.state?.add(child.pid!, record.pgid, record.requestId, record.command, record.args, spawnedWithToken, spawnedInfo(child)?.container)
}

/**
 * Its stdout and stderr: drained from the start (an unread pipe would block it for ever) and kept,
 * within the output bounds, as this incarnation's (output.ts); each chunk is an 'output' event.
 */
const keepOutput: IncarnationStep = (core, entry) => {
  const { child, record } = entry
  const incarnation = record.restarts
  core.output.attach(record, child, incarnation, (stream, offset, data) =>
    core.event('output', { requestId: record.requestId, pid: child.pid!, incarnation, stream, offset, data }),
  )
}

/** Its exit: written into the record, an 'exit' event, then (unless a stop asked for it) the restart policy. */
const followExit: IncarnationStep = (core, entry) => {
  const { child, record } = entry
  const pid = child.pid!
  child.once('exit', (code, signal) => {
    entry.health?.monitor?.stop()
    core.state?.remove(pid)
    recordExit(record, code, signal)
    core.event('exit', copyRecord(record))
    // A stop the supervisor asked for settles the status itself, and is never restarted.
    if (entry.stopping === 0) core.unaskedExit(entry, code, signal)
  })
}

/** In order, for every incarnation that starts running. */
const INCARNATION_STEPS: readonly IncarnationStep[] = [recordInState, keepOutput, startHealthChecks, followExit]

/** Runs every step for the incarnation now in `entry.child`. */
export function watchIncarnation(core: Core, entry: Entry, spawnedWithToken: boolean): void {
  for (const step of INCARNATION_STEPS) step(core, entry, spawnedWithToken)
}

function recordExit(record: ProcessRecord, code: number | null, signal: NodeJS.Signals | null): void {
  record.exitCode = code
  record.signal = signal
  record.exitedAt = new Date()
  Object.assign(record.incarnations.at(-1)!, { exitCode: code, signal, exitedAt: record.exitedAt })
}

/**
 * Registers a child (spawned here or adopted) under a new record; a running one goes through the
 * incarnation steps and is announced ('spawn', then 'status').
 */
export function registerChild(
  core: Core,
  child: ChildProcess,
  command: string,
  args: string[],
  requestId: string | number | null,
  spawnedWithToken = false,
  plan: Pick<Entry, 'restart' | 'health'> = { restart: null, health: null },
): Entry {
  const pid = child.pid!
  const exited = child.exitCode !== null || child.signalCode !== null
  // A child spawn() did not start gets the same tracking (pinned handle, group trust), now,
  // before libuv can reap it.
  const info = spawnedInfo(child) ?? (exited ? undefined : trackChild(child))
  const handle: ProcessHandle | null = info?.handle && !info.handle.closed ? info.handle : null
  const record = newRecord(child, info?.pgid ?? null, requestId, command, args, plan.restart?.restarter.spec.policy ?? 'never')
  const entry = core.registry.add(record, child, handle, plan)
  if (!exited) watchIncarnation(core, entry, spawnedWithToken)
  logEvent(core.logger, 'info', 'process.started', { pid, pgid: record.pgid, requestId, command })
  if (!exited) core.event('spawn', copyRecord(record), child)
  core.event('status', copyRecord(record))
  core.registry.prune()
  return entry
}
