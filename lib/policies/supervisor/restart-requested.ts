/**
 * restart(): a child stopped and started again because someone asked (`sup.restart(id)`, `reapkit
 * restart ID`), whatever its restart policy. The stop is terminate()'s (SIGTERM to its group, SIGKILL
 * after the grace, a backoff wait cancelled); the next incarnation starts at once, under the same
 * record and request id, with the options of the first, reason 'requested'. It is not a failure:
 * it counts in no intensity window.
 */
import type { ChildProcess } from 'node:child_process'
import { ReapkitError } from '../../ground/errors'
import { logEvent } from '../../ground/logger'
import { type KillResult, killProcessGracefully } from '../../mechanisms/kill'
import { type SpawnOptions, spawn, spawnedInfo } from '../../mechanisms/spawn'
import type { Core } from './core'
import { watchIncarnation } from './incarnation'
import { copyRecord, type ProcessRecord, startIncarnation } from './record'
import { type Entry, exited, live } from './registry'
import { quiesce, settle } from './settle'
import { joinStopUnderWay } from './shutdown'

export interface RestartResult {
  /** The stop of the incarnation that ran. */
  stop: KillResult
  /** The record, its new incarnation running. */
  record: ProcessRecord
}

export async function restartRequested(core: Core, entry: Entry, options: SpawnOptions, graceMs: number): Promise<RestartResult> {
  const { record } = entry
  if (!live(entry)) {
    throw new ReapkitError('ERR_REAPKIT_NOT_RUNNING', `${JSON.stringify(record.requestId ?? record.pid)} is ${record.status}: restart() starts again a child that runs; spawn() a finished one anew`)
  }
  if (entry.stopping > 0) throw new ReapkitError('ERR_REAPKIT_STOPPING', `${JSON.stringify(record.requestId ?? record.pid)} is being stopped already`)
  logEvent(core.logger, 'info', 'process.restart-requested', { pid: record.pid, requestId: record.requestId })
  const joinUnderWay = joinStopUnderWay(entry)
  quiesce(core, entry) // no health check, no backoff restart of its own meanwhile
  entry.stopping++
  let stop: KillResult
  try {
    if (record.status !== 'restarting') {
      record.status = 'restarting'
      core.event('status', record)
    }
    stop = await joinUnderWay(await killProcessGracefully(entry.child, { graceMs, logger: core.logger }))
  } finally {
    entry.stopping--
  }
  if (!exited(entry) || !core.restartsAllowed()) {
    // It did not end (nothing to start beside it), or a shutdownAll()/dispose() began meanwhile.
    settle(core, entry, stop.escalated ? 'killed' : 'terminated', { report: stop, reason: 'terminate' })
    throw new ReapkitError('ERR_REAPKIT_NOT_RESTARTED', `${JSON.stringify(record.requestId ?? record.pid)} was stopped but not started again: ${exited(entry) ? 'the supervisor is shutting down' : 'it did not exit'}`)
  }
  let child: ChildProcess
  try {
    child = spawn(record.command, record.args, options)
  } catch (err) {
    settle(core, entry, 'terminated', { report: stop, reason: 'terminate' })
    throw err
  }
  if (child.pid === undefined) {
    const error = await new Promise<Error>((resolve) => child.once('error', resolve))
    settle(core, entry, 'terminated', { report: stop, reason: 'terminate' })
    throw error
  }
  child.on('error', (err) => logEvent(core.logger, 'warn', 'process.error', { pid: child.pid, error: err.message }))
  const info = spawnedInfo(child)
  core.registry.reindex(entry, child, info?.handle && !info.handle.closed ? info.handle : null)
  startIncarnation(record, child, info?.pgid ?? null, 'requested', 0)
  watchIncarnation(core, entry, core.state !== null)
  core.state?.flush()
  logEvent(core.logger, 'info', 'process.restarted', { pid: record.pid, requestId: record.requestId, restarts: record.restarts })
  core.event('restart', record, child)
  core.event('spawn', record, child)
  core.event('status', record)
  return { stop, record: copyRecord(record) }
}
