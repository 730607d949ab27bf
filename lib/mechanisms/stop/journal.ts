/**
 * What a stop has done and what it could not see, shared by every unit of one stop: the signals
 * sent (with their log events) and the first error that made the result uncertain.
 */
import { type Logger, logEvent } from '../../ground/logger'
import type { SignalSent } from './types'

export const now = (): number => performance.now()

export class StopJournal {
  readonly started = now()
  readonly signalsSent: SignalSent[] = []
  uncertain = false
  /**
   * Uncertain for a reason the target's group may hide (not one of the child's cgroup unit alone):
   * only then may the group unit's one killpg be needed. The cgroup unit's own failures leave the
   * group's members to their pins; a killpg on top would give them the signal twice.
   */
  groupUncertain = false
  error: Error | null = null

  constructor(readonly logger: Logger | undefined) {}

  /** Milliseconds since the stop began. */
  elapsed(): number {
    return now() - this.started
  }

  /**
   * A resource error (EMFILE...) is never read as "gone": the stop goes on with what it can reach,
   * and the result says it could not see everything. The first error is the one reported.
   * `source` 'cgroup': the child's cgroup unit's own failure (see groupUncertain).
   */
  degraded(err: unknown, source?: 'cgroup'): void {
    this.uncertain = true
    if (source !== 'cgroup') this.groupUncertain = true
    this.error ??= err instanceof Error ? err : new Error(String(err))
  }

  /** Records a signal sent, with its `signal.sent` event; `fields` name the unit ({ pid, pgid }). */
  sent(fields: object, sent: SignalSent, level: 'info' | 'warn' = 'info', extra: object = {}): void {
    this.signalsSent.push(sent)
    logEvent(this.logger, level, 'signal.sent', { ...fields, ...sent, ...extra })
  }
}
