/**
 * What follows an exit the supervisor did not ask for: the restart policy (restart.ts) decides,
 * then one of three steps runs: restart later (after the backoff, once the last incarnation's
 * leftovers are stopped), give up, or settle (it is over).
 */
import type { ChildProcess } from 'node:child_process'
import { logEvent } from '../../ground/logger'
import { killProcessGracefully } from '../../mechanisms/kill'
import { spawn, spawnedInfo } from '../../mechanisms/spawn'
import type { Core } from './core'
import { watchIncarnation } from './incarnation'
import { copyRecord, startIncarnation } from './record'
import type { Entry } from './registry'
import type { StartReason } from './restart'
import { settle } from './settle'

type RestartReason = Exclude<StartReason, 'start'>

/**
 * An exit nobody here asked for (a stop for failed health checks included): the restart policy
 * decides (none: it is over).
 */
export function afterExit(core: Core, entry: Entry, code: number | null, signal: NodeJS.Signals | null): void {
  const unhealthy = entry.health?.unhealthy ?? false
  if (entry.health) entry.health.unhealthy = false
  const restarter = entry.restart?.restarter
  const decision = restarter && core.restartsAllowed() ? restarter.decide(code, signal, unhealthy) : null
  if (decision?.action === 'restart') return restartLater(core, entry, decision.delayMs, decision.reason)
  if (decision?.action === 'give-up') return giveUp(core, entry)
  settle(core, entry, unhealthy ? 'terminated' : 'exited')
}

function restartLater(core: Core, entry: Entry, delayMs: number, reason: RestartReason): void {
  const { record } = entry
  record.status = 'restarting'
  record.nextStartAt = new Date(Date.now() + delayMs)
  logEvent(core.logger, 'info', 'process.restarting', { pid: record.pid, requestId: record.requestId, delayMs, reason })
  core.event('status', copyRecord(record))
  core.state?.noteRestarts(record.requestId, entry.restart!.restarter.recent(), entry.restart!.restarter.spec.windowMs)
  // What the last incarnation left in its group is stopped before the next one starts.
  const leftovers = killProcessGracefully(entry.child, { graceMs: core.graceMs, logger: core.logger })
  entry.restart!.leftovers = leftovers
  entry.restart!.restarter.schedule(delayMs, leftovers, () => restartNow(core, entry, delayMs, reason))
}

/** Starts the next incarnation under the same record. */
function restartNow(core: Core, entry: Entry, delayMs: number, reason: RestartReason): void {
  const { record } = entry
  entry.restart!.leftovers = undefined
  let child: ChildProcess
  try {
    child = spawn(record.command, record.args, entry.restart!.options)
  } catch (err) {
    // e.g. out of descriptors: a failure like any other, under the same intensity limit
    logEvent(core.logger, 'warn', 'process.restart-failed', { requestId: record.requestId, error: (err as Error).message })
    return afterExit(core, entry, null, null)
  }
  if (child.pid === undefined) {
    child.once('error', (err) => logEvent(core.logger, 'warn', 'process.restart-failed', { requestId: record.requestId, error: err.message }))
    return afterExit(core, entry, null, null) // counts as a failure: the intensity limit still applies
  }
  child.on('error', (err) => logEvent(core.logger, 'warn', 'process.error', { pid: child.pid, error: err.message }))
  const info = spawnedInfo(child)
  core.registry.reindex(entry, child, info?.handle && !info.handle.closed ? info.handle : null)
  startIncarnation(record, child, info?.pgid ?? null, reason, delayMs)
  watchIncarnation(core, entry, core.state !== null)
  core.state?.flush() // now: a crash right after must not hide this incarnation from the next supervisor
  logEvent(core.logger, 'info', 'process.restarted', { pid: record.pid, requestId: record.requestId, restarts: record.restarts })
  core.event('restart', copyRecord(record), child)
  core.event('spawn', copyRecord(record), child)
  core.event('status', copyRecord(record))
}

function giveUp(core: Core, entry: Entry): void {
  const { record } = entry
  logEvent(core.logger, 'warn', 'process.given-up', { pid: record.pid, requestId: record.requestId, restarts: record.restarts })
  settle(core, entry, 'given-up')
  core.event('give-up', copyRecord(record))
}
