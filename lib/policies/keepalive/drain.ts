/**
 * The drain, in its phases: stop new work and tell the drain listeners; wait for the work in flight
 * (bounded by the grace) and abandon the rest; run the shutdown hooks (each bounded); flush and
 * write the final line; exit.
 */
import { type Logger, logEvent } from '../../ground/logger'
import { settlesWithin } from '../../ground/wait'
import type { ShutdownHook } from './options'
import { type Reporter, writeFinalReport } from './report'
import type { Triggers } from './triggers'
import type { ShutdownReport } from './types'
import type { Phase, WorkRegistry } from './work'

/** How long a drain that the parent-death signal started waits for the parent's exit event. */
const PARENT_EXIT_SETTLE_MS = 50

export interface DrainParts {
  phase: Phase
  work: WorkRegistry
  reporter: Reporter
  triggers: Triggers
  hooks: ShutdownHook[]
  drainListeners: Array<(reason: string) => unknown>
  graceMs: number
  flushTimeoutMs: number
  finalLine: boolean
  exit: boolean
  logger: Logger | undefined
}

/** Phase 1, synchronous: new work is refused from here on, and the drain listeners are called. */
export function beginDrain(parts: DrainParts, reason: string): void {
  const { phase, work } = parts
  phase.reason = reason
  phase.triggeredAt = performance.now()
  work.markTrigger()
  phase.state = 'draining'
  logEvent(parts.logger, 'info', 'keepalive.draining', { reason, inFlight: work.inFlight })
  for (const listener of parts.drainListeners) callDrainListener(listener, reason, parts.logger)
}

/** Calls one drain listener, not awaited; its errors are logged. */
export function callDrainListener(listener: (reason: string) => unknown, reason: string, logger: Logger | undefined): void {
  Promise.resolve()
    .then(() => listener(reason))
    .catch((err: unknown) => logEvent(logger, 'error', 'keepalive.drain-hook-error', { error: String(err) }))
}

/** The phases after the trigger, to the end. */
export async function completeDrain(parts: DrainParts, onClosed: (report: ShutdownReport) => void): Promise<ShutdownReport> {
  const { phase, work } = parts
  // Awaited only when there is something to wait for: with nothing in flight, the state is
  // 'closing' before shutdown() returns, as it always was.
  if (work.inFlight > 0) await work.settle(parts.graceMs)
  work.abandonRest(phase.reason!)
  if (awaitsParentExit(parts)) await settlesWithin(parts.triggers.parentExit, PARENT_EXIT_SETTLE_MS)
  phase.state = 'closing'
  await runHooks(parts)
  const final = await writeFinalReport(parts.reporter, parts.finalLine, parts.flushTimeoutMs)
  phase.finalElapsedMs = final.elapsedMs
  phase.state = 'closed'
  parts.triggers.dispose()
  onClosed(final)
  if (parts.exit) process.exit(final.abandoned === 0 ? 0 : 1)
  return final
}

/**
 * The death signal while getppid() still names the parent: a multi-threaded parent whose spawning
 * thread died first, and whose exit event is a few ms behind. Give that event a moment (at most
 * PARENT_EXIT_SETTLE_MS, only in this ambiguous case) so the report says why.
 */
function awaitsParentExit({ phase, triggers }: DrainParts): boolean {
  return phase.reason === triggers.deathSignal && triggers.watchesParent
}

/** The shutdown hooks, in order, each bounded by its timeout; a hook's error or timeout is logged. */
async function runHooks({ hooks, reporter, logger }: DrainParts): Promise<void> {
  for (const { hook, timeoutMs } of hooks) {
    try {
      const ok = await settlesWithin(Promise.resolve().then(() => hook(reporter.report())), timeoutMs)
      if (!ok) logEvent(logger, 'warn', 'keepalive.hook-timeout', { hookTimeoutMs: timeoutMs })
    } catch (err) {
      logEvent(logger, 'error', 'keepalive.hook-error', { error: String(err) })
    }
  }
}
