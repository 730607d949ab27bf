/**
 * The Supervisor's side of health checks (the checks themselves: health.ts): one monitor per
 * running incarnation (from when it is ready), and the stop of a child that failed too many in a
 * row: the supervisor's own stop (own-stop.ts), then the restart policy.
 */
import type { ChildProcess } from 'node:child_process'
import { logEvent } from '../../ground/logger'
import type { Core } from './core'
import { HealthMonitor } from './health'
import { stopFor } from './own-stop'
import { copyRecord } from './record'
import { type Entry, running } from './registry'

/** The running incarnation's health checks, when the child has some. */
export function startHealthChecks(core: Core, entry: Entry): void {
  const health = entry.health
  if (!health) return
  const child = entry.child
  health.monitor = new HealthMonitor(health.spec, {
    context: () => ({ child, record: copyRecord(entry.record) }),
    failed: (error, inARow) => {
      logEvent(core.logger, 'warn', 'process.health-fail', { pid: child.pid, requestId: entry.record.requestId, inARow, error: String(error) })
      core.event('health-fail', entry.record, error, inARow)
    },
    unhealthy: () => stopUnhealthy(core, entry, child),
  })
}

/** Failed health checks: the supervisor's own stop (own-stop.ts), reason 'unhealthy'. */
function stopUnhealthy(core: Core, entry: Entry, child: ChildProcess): void {
  if (entry.child !== child || entry.stopping > 0 || !running(entry)) return
  stopFor(core, entry, 'unhealthy')
}
