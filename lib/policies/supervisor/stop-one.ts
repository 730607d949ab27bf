/**
 * terminate()'s stop of one registered child: SIGTERM to its group, a bounded wait, SIGKILL; the
 * stop of its last incarnation's leftovers, when one is under way, joins the report.
 */
import { logEvent } from '../../ground/logger'
import { type KillResult, killProcessGracefully } from '../../mechanisms/kill'
import type { Core } from './core'
import { type Entry, exited } from './registry'
import { quiesce, settle, settleIfExited, stoppedStatus } from './settle'
import { joinStopUnderWay, neverRanReport } from './shutdown'

export async function stopOne(core: Core, entry: Entry, graceMs: number, reason: string | null): Promise<KillResult> {
  logEvent(core.logger, 'info', 'terminate', { pid: entry.record.pid, requestId: entry.record.requestId, reason })
  if (entry.child.pid === undefined) return stopNeverRan(core, entry)
  // A stop of the last incarnation's leftovers may be under way: what it did belongs to this report.
  const joinUnderWay = joinStopUnderWay(entry)
  quiesce(core, entry) // a backoff wait ends here, before anything is awaited
  entry.stopping++
  try {
    const result = await joinUnderWay(await killProcessGracefully(entry.child, { graceMs, logger: core.logger }))
    // Only an exit seen is an end: a stop that could not reach the process leaves it 'running'.
    const stop = { report: result, reason: 'terminate' as const }
    if (exited(entry)) settle(core, entry, stoppedStatus(stop), stop)
    return result
  } finally {
    entry.stopping--
    settleIfExited(core, entry) // e.g. killProcessGracefully threw after the child exited
  }
}

/** A child whose start failed (nothing ran): its pending restart ends, and it is 'terminated'. */
function stopNeverRan(core: Core, entry: Entry): KillResult {
  const { requestId: _, ...report } = neverRanReport(entry)
  quiesce(core, entry)
  settle(core, entry, 'terminated', { report, reason: 'terminate' })
  return report
}
