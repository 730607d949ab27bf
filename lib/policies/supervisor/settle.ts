/**
 * The end of a child's status: once settled (exited, terminated, killed, given-up) it is final. And
 * quiesce: what a stop does first, before anything is awaited (no more health checks, no pending
 * restart).
 */
import { logEvent } from '../../ground/logger'
import type { Core, Stop } from './core'
import type { ProcessStatus } from './record'
import { type Entry, exited, live } from './registry'

/**
 * starting, running (or restarting) -> exited | terminated | killed | start-failed | given-up, once:
 * a finished status is final. `stop`: the stop that ended it, when the supervisor made one.
 */
export function settle(core: Core, entry: Entry, status: ProcessStatus, stop?: Stop): void {
  if (!live(entry) || status === 'running' || status === 'starting') return
  entry.record.status = status
  entry.record.exitedAt ??= new Date()
  entry.record.nextStartAt = null
  logEvent(core.logger, 'info', 'process.status', { pid: entry.record.pid, requestId: entry.record.requestId, status })
  core.event('status', entry.record)
  if (stop) announceStop(core, entry, stop)
  core.registry.finish(entry)
}

/** A stop the supervisor made ended an incarnation: 'terminate', and 'escalate' when it needed SIGKILL. */
export function announceStop(core: Core, entry: Entry, { report, reason }: Stop): void {
  core.event('terminate', entry.record, report, reason)
  if (report.escalated) core.event('escalate', entry.record, report, reason)
}

/** The status a stop the supervisor made leaves, whatever the child did meanwhile. */
export const stoppedStatus = (stop: Stop): ProcessStatus => (stop.report.escalated ? 'killed' : 'terminated')

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
  entry.ready?.wait?.cancel()
  if (!entry.restart?.restarter.cancel()) return
  // No start is due any more: it stays 'restarting' only until the stop that ends it is over.
  entry.record.nextStartAt = null
  if (status) settle(core, entry, status)
}
