/**
 * A child's incarnations: how a child is registered, and the steps every incarnation goes through
 * once it runs (the first one and each restart alike). A new thing to do for every running
 * incarnation is one more named step in INCARNATION_STEPS, not a branch elsewhere.
 */
import type { ChildProcess } from 'node:child_process'
import { ReapkitError } from '../../ground/errors'
import { logEvent } from '../../ground/logger'
import type { ProcessHandle } from '../../mechanisms/handle'
import { spawnedInfo, trackChild } from '../../mechanisms/spawned'
import type { Core } from './core'
import { startHealthChecks } from './health-watch'
import { stopFor } from './own-stop'
import { awaitReady } from './readiness'
import { copyRecord, newRecord, type ProcessRecord } from './record'
import { type Entry, NO_PLAN, type Plan } from './registry'

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
    // Before it was ready, on its own (a stop, for not being ready say, keeps the reason it gave):
    // its start failed, told as a ready timeout is ('start-failed', counted), after its 'exit'.
    let notReady: ReapkitError | null = null
    if (record.status === 'starting') {
      entry.ready?.wait?.cancel()
      if (entry.stopping === 0) {
        notReady = new ReapkitError('ERR_REAPKIT_NOT_READY', `It exited before it was ready (code ${code}, signal ${signal})`)
        record.error = { code: notReady.code, message: notReady.message }
      }
    }
    core.state?.remove(pid)
    recordExit(record, code, signal)
    core.event('exit', record)
    if (notReady) core.event('start-failed', record, notReady)
    // A stop the supervisor makes settles the status itself (or, its own, hands it on when over).
    if (entry.stopping === 0) core.ended(entry, { kind: 'exit', code, signal })
  })
}

/**
 * Without a readiness condition it is ready now: its health checks start. With one, it stays
 * 'starting' until it is ready (then 'running', a 'ready' event, its health checks), or is stopped
 * at the bound (reason 'not-ready', a 'start-failed' event).
 */
const startWhenReady: IncarnationStep = (core, entry) => {
  const ready = entry.ready
  if (!ready) return startHealthChecks(core, entry)
  const { child, record } = entry
  ready.wait = awaitReady(ready.spec, {
    context: () => ({ child, record: copyRecord(record) }),
    output: core.outputSource,
    ready: () => {
      ready.wait = null
      record.status = 'running'
      record.error = null
      logEvent(core.logger, 'info', 'process.ready', { pid: child.pid, requestId: record.requestId, afterMs: Date.now() - record.startedAt.getTime() })
      core.event('ready', record)
      core.event('status', record)
      startHealthChecks(core, entry)
    },
    notReady: (error) => {
      ready.wait = null
      if (entry.stopping > 0 || entry.child !== child) return
      record.error = { code: 'ERR_REAPKIT_NOT_READY', message: error.message }
      core.event('start-failed', record, error)
      stopFor(core, entry, 'not-ready')
    },
  })
}

/** In order, for every incarnation that starts running. */
const INCARNATION_STEPS: readonly IncarnationStep[] = [recordInState, keepOutput, followExit, startWhenReady]

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
 * incarnation steps and is announced ('spawn', then 'status'). One whose spawn failed (no pid) is
 * 'starting' until its 'error' settles it (restart-flow.ts).
 */
export function registerChild(
  core: Core,
  child: ChildProcess,
  command: string,
  args: string[],
  requestId: string | number | null,
  spawnedWithToken = false,
  plan: Plan = NO_PLAN,
): Entry {
  const pid = child.pid
  const exited = pid === undefined || child.exitCode !== null || child.signalCode !== null
  // A child spawn() did not start gets the same tracking (pinned handle, group trust), now,
  // before libuv can reap it.
  const info = spawnedInfo(child) ?? (exited ? undefined : trackChild(child))
  const handle: ProcessHandle | null = info?.handle && !info.handle.closed ? info.handle : null
  const record = newRecord(child, info?.pgid ?? null, requestId, command, args, plan.restart?.restarter.spec.policy ?? 'never', plan.ready !== null)
  const entry = core.registry.add(record, child, handle, plan)
  if (!exited) watchIncarnation(core, entry, spawnedWithToken)
  if (pid !== undefined) logEvent(core.logger, 'info', 'process.started', { pid, pgid: record.pgid, requestId, command })
  if (!exited) core.event('spawn', record, child)
  core.event('status', record)
  core.registry.prune()
  return entry
}
