/** The report step: a stop's result, with the target's own exit status where it is known, and its containers' outcomes. */
import type { ChildProcess } from 'node:child_process'
import { childExit, settlesWithin } from '../../ground/wait'
import type { StopOutcome } from './escalate'
import type { StopJournal } from './journal'
import type { PinnedTarget } from './pin'
import type { ContainerOutcome } from '../container/stop'
import type { KillResult } from './types'
import type { TargetUnit } from './unit'
import type { CgroupOutcome } from './cgroup-unit'
import { reachOf } from './reach'

type Status = { code: number | null; signal: NodeJS.Signals | null }

export async function report(target: PinnedTarget, unit: TargetUnit, outcome: StopOutcome, journal: StopJournal, containers: ContainerOutcome[], cgroup?: CgroupOutcome): Promise<KillResult> {
  const { child } = target
  const status = child && outcome.survivors.length === 0 ? await childStatus(child, unit.targetGone()) : null
  return {
    pid: target.pid,
    pgid: unit.pgid,
    signalsSent: journal.signalsSent,
    escalated: outcome.escalated,
    code: status?.code ?? null,
    signal: status?.signal ?? null,
    survivors: outcome.survivors,
    uncertain: journal.uncertain,
    error: journal.error,
    containers,
    containerSurvivors: outcome.containerSurvivors,
    durationMs: journal.elapsed(),
    reach: cgroup ? 'cgroup' : reachOf(child, unit.pgid),
    ...(cgroup ? { cgroup } : {}),
  }
}

/**
 * The target's own status, from the ChildProcess (exact). libuv reports the exit once it has reaped
 * the child, right after its unit is gone (`exited`); bounded in case the child is not ours to reap.
 * Neither the timer nor the listener outlives the wait.
 */
async function childStatus(child: ChildProcess, exited: boolean): Promise<Status | null> {
  let status = statusOf(child)
  if (!status && exited) {
    const exit = childExit(child)
    await settlesWithin(exit.promise, 1000)
    exit.dispose()
    status = statusOf(child)
  }
  return status
}

/** Reads the child's status now if it has exited (no listener left behind when it has not). */
function statusOf(child: ChildProcess): Status | null {
  return child.exitCode !== null || child.signalCode !== null ? { code: child.exitCode, signal: child.signalCode } : null
}
