/**
 * A stop the supervisor makes on its own, for a reason of the child's: failed health checks
 * ('unhealthy', health-watch.ts) or not ready in time ('not-ready', readiness.ts). It is a stop
 * like terminate()'s: the bounded two-phase close, its 'terminate' (and 'escalate') event with
 * that reason, counted in the metrics; then the restart policy decides what follows.
 */
import { logEvent } from '../../ground/logger'
import { closeClient } from '../close'
import type { Core } from './core'
import { type Entry, exited, live } from './registry'

export function stopFor(core: Core, entry: Entry, reason: 'unhealthy' | 'not-ready'): void {
  const { child, record } = entry
  logEvent(core.logger, 'warn', `process.${reason}`, { pid: child.pid, requestId: record.requestId })
  entry.stopping++
  // Ours only while no other stop took it over and this incarnation is still the entry's.
  const ours = (): boolean => entry.stopping === 0 && entry.child === child && live(entry)
  closeClient(child, { closeTimeoutMs: core.closeTimeoutMs, graceMs: core.graceMs, logger: core.logger }).then(
    (report) => {
      entry.stopping--
      if (ours()) core.ended(entry, { kind: 'stopped', stop: { report: { ...report, requestId: record.requestId, capped: false }, reason } })
    },
    (err: Error) => {
      entry.stopping--
      logEvent(core.logger, 'warn', `process.${reason}-stop-failed`, { pid: child.pid, error: err.message })
      if (ours() && exited(entry)) core.ended(entry, { kind: 'exit', code: child.exitCode, signal: child.signalCode })
    },
  )
}
