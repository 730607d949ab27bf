/**
 * The unit of a stop: everything that belongs to the child, a way to end it, and a way to know it
 * is gone. A stop runs the same steps over a list of units (settle.ts, escalate.ts): the target's
 * own unit first (a process group with its adopted descendants, or a Windows job), and any unit
 * that must be stopped alongside it (a container, say) after it.
 *
 * Why `sweep` both finds the members and signals them, rather than one call for each: a member
 * signalled by number (an unpinned child, or its group by id) is exact only in the loop turn where
 * the listing last checked that it was not reaped (checkPhase()). One call keeps that check and the
 * signal together, so no composition of units can put an await between them.
 */

export interface StopUnit {
  /** The fields that name the unit in its log events (`{ pid, pgid }` for a process group). */
  readonly fields: Readonly<Record<string, unknown>>
  /**
   * Begins a phase: from now on `sweep` sends `sig`, once to each member. `force` marks the
   * escalation (the kill signal), after the graceful phase did not end the unit within the grace.
   */
  phase(sig: number, force: boolean): void
  /**
   * Finds the members anew, sends the phase's signal to each one that has not had it, and resolves
   * to the exits still awaited: none once the unit is gone. Never rejects; an exit that cannot be
   * watched is the unit's to poll, and what it cannot see makes the stop uncertain (StopJournal).
   */
  sweep(): Promise<Array<Promise<unknown>>>
  /** The processes still alive, by pid (called when the stop gives up on them). */
  survivors(): number[]
  /** Releases what the stop holds (pins, listeners) and ends any poll. Called once, at the end. */
  close(): void
}

/** The unit the target itself belongs to: the report reads its group and the target's exit from it. */
export interface TargetUnit extends StopUnit {
  /** The group signalled, or null when only the process itself was (and on Windows). */
  readonly pgid: number | null
  /** Whether the target was seen to exit (its own status is then worth waiting for). */
  targetGone(): boolean
}
