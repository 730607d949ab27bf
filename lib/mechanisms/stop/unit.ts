/**
 * The unit of a stop: everything that belongs to the child, a way to end it, and a way to know it
 * is gone. A stop runs the same steps over a list of units (escalate.ts, settle.ts): the target's
 * own unit first (a process group with its adopted descendants, group-unit.ts, or a Windows job,
 * job-unit.ts), then any unit that must be stopped alongside it: a container client's container
 * (container/unit.ts), ended and confirmed through its engine.
 *
 * Each unit goes through the phases on its own, all under the stop's one deadline: a container the
 * engine is still removing does not hold back the group's escalation, nor the group the engine's.
 *
 * Why `sweep` both finds the members and signals them, rather than one call for each: a member
 * signalled by number (an unpinned child, or its group by id) is exact only in the loop turn where
 * the listing last checked that it was not reaped (checkPhase()). One call keeps that check and the
 * signal together, so no composition of units can put an await between them.
 */

/** What a stop could not end: a process by its pid, or a container by its engine's id. */
export type Survivor = number | string

export interface StopUnit {
  /** The fields that name the unit in its log events (`{ pid, pgid }` for a process group). */
  readonly fields: Readonly<Record<string, unknown>>
  /**
   * Begins a phase: from now on `sweep` sends `sig`, once to each member. `force` marks the
   * escalation (the kill signal), after the graceful phase did not end the unit within the grace.
   * `until` is when the phase ends (performance.now() time): the grace's end, then the confirm's.
   */
  phase(sig: number, force: boolean, until: number): void
  /**
   * Finds the members anew, sends the phase's signal to each one that has not had it, and resolves
   * to the exits still awaited: none once the unit is gone. Never rejects; an exit that cannot be
   * watched is the unit's to poll, and what it cannot see makes the stop uncertain (StopJournal).
   * Null when nothing more can be done or learned without it being gone (a container unit that
   * joined another stop of it, which gave up): the stop gives up on it at once.
   */
  sweep(): Promise<Array<Promise<unknown>> | null>
  /** What is still there, by pid or container id (called when the stop gives up on the unit). */
  survivors(): Survivor[]
  /**
   * Releases what the stop holds (pins, listeners, engine calls in flight) and ends any poll.
   * Called once, at the end; the stop awaits it.
   */
  close(): void | Promise<void>
}

/** The unit the target itself belongs to: the report reads its group and the target's exit from it. */
export interface TargetUnit extends StopUnit {
  /** The group signalled, or null when only the process itself was (and on Windows). */
  readonly pgid: number | null
  /** Whether the target was seen to exit (its own status is then worth waiting for). */
  targetGone(): boolean
}

/** Closes every unit of a stop (each once, all of them even when one throws). */
export async function closeUnits(units: readonly StopUnit[]): Promise<void> {
  const closing = units.map(async (u) => u.close())
  const failed = (await Promise.allSettled(closing)).find((r) => r.status === 'rejected')
  if (failed) throw (failed as PromiseRejectedResult).reason
}
