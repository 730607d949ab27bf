/**
 * The end of a child's status: once settled (exited, terminated, killed, given-up) it is final. And
 * quiesce: what a stop does first, before anything is awaited (no more health checks, no pending
 * restart).
 */
import { logEvent } from '../../ground/logger'
import type { Core } from './core'
import { copyRecord, type ProcessStatus, type StopReport } from './record'
import { type Entry, exited, live } from './registry'

/**
 * running (or restarting) -> exited | terminated | killed | given-up, once: a finished status is
 * final. `report`: the stop that ended it, when the supervisor asked for one.
 */
export function settle(core: Core, entry: Entry, status: ProcessStatus, report?: StopReport): void {
  if (!live(entry) || status === 'running') return
  entry.record.status = status
  entry.record.exitedAt ??= new Date()
  entry.record.nextStartAt = null
  logEvent(core.logger, 'info', 'process.status', { pid: entry.record.pid, requestId: entry.record.requestId, status })
  core.event('status', copyRecord(entry.record))
  if (report) {
    core.event('terminate', copyRecord(entry.record), report)
    if (report.escalated) core.event('escalate', copyRecord(entry.record), report)
  }
  core.registry.finish(entry)
}

/** A live entry whose leader libuv has reaped: 'exited' (e.g. a stop threw after the child exited). */
export function settleIfExited(core: Core, entry: Entry): void {
  if (live(entry) && exited(entry)) settle(core, entry, 'exited')
}

/**
 * No more health checks or restarts of their own for this child: a pending backoff wait ends at
 * once (the child then settles with `status`, when given).
 */
export function quiesce(core: Core, entry: Entry, status?: ProcessStatus): void {
  entry.health?.monitor?.stop()
  if (!entry.restart?.restarter.cancel()) return
  // No start is due any more: it stays 'restarting' only until the stop that ends it is over.
  entry.record.nextStartAt = null
  if (status) settle(core, entry, status)
}
