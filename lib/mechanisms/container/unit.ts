/**
 * The container of a docker/podman client as the unit of a stop (stop/unit.ts): its members are
 * the containers the run put in the engine (found by its `reapkit.run` label, or, for a container
 * doctor found leaked, given by id: `ids`), ended and confirmed gone through the engine, under the
 * stop's one deadline.
 *
 *   phase(graceful)  the engine's own stop with what is left of the grace (`stop -t`: STOPSIGNAL,
 *                    then its SIGKILL), started once, on what the first look finds running;
 *   phase(force)     the engine's kill of what still runs, waited for (bounded); with `--rm`, a
 *                    leftover at rest is removed (podman's own cleanup died with its client). Never
 *                    `rm -f` of a container not at rest (looks.ts): podman 4 removes the record of
 *                    a container a stop is ending without killing it (its conmon and PID 1 run on);
 *   sweep            a look through the engine; resolves to the next observation (the engine's stop
 *                    returning, or the next look) while the run is not confirmed gone: with `--rm`,
 *                    nothing listed; without, nothing but containers at rest (the stopped container
 *                    stays, as asked; one never started only on two looks in a row: its start
 *                    may be on its way); never while the engine's stop or kill is in flight;
 *   survivors        the ids not confirmed gone.
 *
 * Every engine call is bounded by what is left of the stop's grace + confirm, and the stop's end
 * (close) cuts short any still running. An engine that does not answer is never read as "gone":
 * when the last look failed, or was overdue at the end, the outcome is 'uncertain' with the error,
 * and the stop's result is marked uncertain (StopJournal).
 */
import { ReapkitError, TimeoutError } from '../../ground/errors'
import { logEvent } from '../../ground/logger'
import { settlesWithin } from '../../ground/wait'
import type { StopJournal } from '../stop/journal'
import type { StopUnit } from '../stop/unit'
import { type Call, EngineCalls } from './engine-calls'
import { isNoSuchContainer, killContainers, stopContainers } from './engine'
import { type Look, look, lookKnown, remaining, removeCreated, removeLeftovers, tallyAtRest } from './looks'
import type { ContainerOutcome, ContainerRecord, ContainerStopOptions } from './stop'

/** What the unit reads of a container stop's options (stop.ts), and who is told its outcome. */
export type ContainerUnitOptions = Pick<ContainerStopOptions, 'confirmMs' | 'settleMs' | 'callTimeoutMs' | 'logger'> & {
  /** Called once with the outcome, at the close, before the outcome is given to anyone waiting on it. */
  onDone?: (outcome: ContainerOutcome) => void
  /**
   * The containers, when already known by id (doctor's leaked ones, which have no spawn record and
   * may have no `reapkit.run` label): every look is by these ids (`inspect`), never by the label,
   * and none is owed for a late create. Default: found by the record's run label.
   */
  ids?: readonly string[]
}

/** A unit whose outcome goes into the stop's result (KillResult.containers). */
export interface ContainerStopUnit extends StopUnit {
  /** How the unit's stop ended (so far, before its close). */
  outcome(): ContainerOutcome
}

/** What the engine's stop leaves of the grace for the engine's own work (its kill, the exit, the removal with --rm). */
const ENGINE_RESERVE_MS = 1000
/** How often the confirm looks again. */
const CONFIRM_POLL_MS = 200
/** The least an engine call is given: with less left, none is made. */
const MIN_CALL_MS = 250
/** A look in flight longer than this (or than twice the slowest answer) when the stop ends: the engine stopped answering. */
const OVERDUE_MIN_MS = 1000
/** How long the close waits for the engine calls it cut short to exit. */
const CLOSE_WAIT_MS = 2000

const now = (): number => performance.now()

/**
 * What is left was never started and only one look found it so (the window ended before a second):
 * it never ran, but its start may be on its way. Not known to survive, nor to be gone.
 */
const unstartedOnce = (ids: string[]): ReapkitError =>
  new ReapkitError('ERR_REAPKIT_CONTAINER_UNSETTLED', `container ${ids.join(', ')} was seen never started on one look only: the confirm window ended before a second (its start may have been on its way)`)
const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)))

export class ContainerUnit implements ContainerStopUnit {
  readonly fields: Readonly<{ engine: string; runId: string }>
  #graceUntil = 0
  /** Every engine call ends by then: the stop's grace + confirm (its confirm's end once it escalated). */
  #deadline = Infinity
  /** The kill phase began (or a stop that joined this one reached its own grace end). */
  #forcing = false
  #hurried!: () => void
  readonly #hurry = new Promise<void>((res) => (this.#hurried = res))
  /** The last answer, and the last look's failure (cleared by an answer). */
  #seen: Look | null = null
  #lookError: Error | undefined
  /** The engine's stop or kill that failed (or went unanswered). */
  #stopError: Error | undefined
  readonly #ids = new Set<string>()
  #gone = false
  #stopped = false
  #stopCall: Promise<void> | null = null
  #stopSettled = false
  #killed = false
  /** A second look is owed when the first finds nothing (see settleMs). */
  #late: boolean
  /** When the last look answered, and the longest an answered look took. */
  #lookEnded = -Infinity
  #slowest = 0
  #next: Promise<void> | null = null
  /** Per container, the looks in a row that found it at rest (looks.ts, tallyAtRest). */
  readonly #tally = new Map<string, number>()
  /** The engine calls in flight, bounded by #deadline, cut short at the stop's end. */
  readonly #engine: EngineCalls
  #final: ContainerOutcome | null = null
  #closed = false

  constructor(
    private readonly record: ContainerRecord,
    private readonly journal: StopJournal,
    private readonly options: ContainerUnitOptions,
  ) {
    this.fields = { engine: record.engine, runId: record.runId }
    this.#engine = new EngineCalls(() => this.#deadline, options.callTimeoutMs)
    for (const id of options.ids ?? []) this.#ids.add(id)
    this.#late = this.#ids.size === 0 && (options.settleMs ?? 0) > 0
  }

  phase(_sig: number, force: boolean, until: number): void {
    if (force) {
      this.#deadline = until
      this.hurry('the grace ended')
      return
    }
    this.#graceUntil = until
    this.#deadline = until + Math.max(0, this.options.confirmMs)
  }

  /** Ends the grace now: the engine's kill of what runs (the kill phase, or a stop that joined this one reached its own grace end). */
  hurry(reason = 'the grace ended early'): void {
    if (this.#forcing) return
    this.#forcing = true
    this.#hurried()
    const running = this.#seen?.running ?? []
    if (running.length > 0 && !this.#gone) void this.#kill(running, reason)
  }

  async sweep(): Promise<Array<Promise<unknown>> | null> {
    if (this.#gone) return []
    if (this.#final) return null // its stop has given up on it
    this.#next ??= this.#observe().finally(() => (this.#next = null))
    return [this.#next]
  }

  /** The stop gave up on the unit: its outcome is final from here (the close reports the same). */
  survivors(): string[] {
    return this.#freeze().survivors
  }

  outcome(): ContainerOutcome {
    if (this.#final) return this.#final
    const base = { engine: this.record.engine, runId: this.record.runId, ids: [...this.#ids], stopped: this.#stopped }
    if (this.#gone) return { ...base, state: 'gone', survivors: [] }
    if (!this.#seen || this.#lookError) {
      const error = this.#lookError ?? this.#stopError ?? new TimeoutError(`${this.record.bin} did not answer within the stop's bound`, Math.max(0, Math.round(this.#deadline - now())))
      return { ...base, state: 'uncertain', survivors: base.ids, error }
    }
    const survivors = remaining(this.record, this.#seen, this.#tally)
    if (!this.#stopError && survivors.length > 0 && survivors.every((id) => this.#seen!.unstarted.includes(id))) return { ...base, state: 'uncertain', survivors, error: unstartedOnce(survivors) }
    return { ...base, state: 'survived', survivors, ...(this.#stopError ? { error: this.#stopError } : {}) }
  }

  /** Cuts short the engine calls still running (an unanswered look makes the outcome uncertain), and reports. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    const outcome = this.#freeze()
    await settlesWithin(Promise.allSettled([...this.#engine.inFlight().map((c) => c.promise), this.#next]), CLOSE_WAIT_MS)
    if (outcome.state === 'uncertain') this.journal.degraded(outcome.error)
    const level = outcome.state === 'gone' ? 'info' : outcome.state === 'survived' ? 'error' : 'warn'
    logEvent(this.options.logger, level, `container.${outcome.state}`, { ...outcome, error: outcome.error ? String(outcome.error) : undefined })
    this.options.onDone?.(outcome)
  }

  /** The unit's stop has ended (its outcome is final). */
  get finished(): boolean {
    return this.#final !== null
  }

  /** The end of the unit's stop: what is still in flight went unanswered, and is cut short. */
  #freeze(): ContainerOutcome {
    if (this.#final) return this.#final
    if (!this.#gone) for (const call of this.#engine.inFlight()) this.#unanswered(call)
    this.#final = this.outcome()
    this.#engine.abort()
    return this.#final
  }

  /** One observation: wait (the engine's stop, or the poll), look, then what the phase asks of what was found. */
  async #observe(): Promise<void> {
    await this.#pause()
    if (this.#final) return
    if (this.#deadline - now() < MIN_CALL_MS) return this.#engine.sleep(this.#deadline - now())
    let seen = await this.#look()
    if (seen && seen.all.length === 0 && this.#late) seen = await this.#lookLate()
    if (!seen || this.#final) return
    if (remaining(this.record, seen, this.#tally).length === 0) return this.#confirm()
    await this.#act(seen)
  }

  /**
   * Nothing keeps the run from being gone. Not while the engine's stop or kill is in flight: the
   * close would cut its client short (SIGKILL), and a podman container whose kill is cut short
   * stays 'stopping' with PID 1 running. The next look, once those calls have returned, confirms.
   */
  #confirm(): void {
    if (this.#engine.acting().length === 0) this.#gone = true
  }

  /**
   * While the engine's stop runs, its return (or the kill phase); else CONFIRM_POLL_MS after the
   * last look answered: an engine slowed by many stops at once (podman's client is heavy) is not
   * kept busier by looks back to back.
   */
  #pause(): Promise<unknown> {
    if (this.#stopCall && !this.#stopSettled && !this.#forcing) return Promise.race([this.#stopCall, this.#hurry])
    const poll = this.#engine.sleep(this.#lookEnded + CONFIRM_POLL_MS - now())
    // Once forcing, the engine's kill (and its stop, which the kill ends) are waited for: they are
    // bounded by the deadline, and a look while they run cannot confirm anything (#confirm).
    const acting = this.#forcing ? this.#engine.acting() : []
    if (acting.length === 0) return poll
    return Promise.all([poll, Promise.race([Promise.allSettled(acting), this.#engine.sleep(this.#deadline - now())])])
  }

  async #look(): Promise<Look | null> {
    // Once the run's containers are known, by id (a run creates one; a late create is looked for by label, see #lookLate).
    const known = this.#late ? [] : [...this.#ids]
    const started = now()
    try {
      const seen = await this.#engine.track(known.length > 0 ? 'inspect' : 'ps', (call) => (known.length > 0 ? lookKnown(this.record, known, call) : look(this.record, call)))
      if (this.#final) return null
      this.#slowest = Math.max(this.#slowest, now() - started)
      this.#seen = seen
      this.#lookError = undefined
      tallyAtRest(seen, this.#tally)
      for (const id of seen.all) this.#ids.add(id)
      if (seen.all.length > 0) this.#late = false
      return seen
    } catch (err) {
      if (!this.#final) this.#lookError = asError(err)
      return null
    } finally {
      this.#lookEnded = now()
    }
  }

  /** The second look, `settleMs` after a first that found nothing (within the deadline); a container left `created` is removed. */
  async #lookLate(): Promise<Look | null> {
    this.#late = false
    await this.#engine.sleep(Math.min(this.options.settleMs ?? 0, this.#deadline - now() - MIN_CALL_MS))
    if (this.#final || this.#deadline - now() < MIN_CALL_MS) return this.#seen
    const again = await this.#look()
    if (!again || again.all.length === 0) return again
    const created = await removeCreated(this.record, again, () => this.#engine.options())
    if (created.length > 0) logEvent(this.options.logger, 'info', 'container.created', { ...this.fields, ids: created })
    return again
  }

  /** What the phase asks of what runs: the engine's stop (once), or its kill (once); with --rm, the leftovers. */
  async #act(seen: Look): Promise<void> {
    const { running } = seen
    // The engine's stop has returned (or the kill phase began) and it still runs: the kill.
    if (running.length > 0 && !this.#killed && (this.#forcing || this.#stopSettled)) return this.#kill(running, this.#forcing ? 'the grace ended' : 'still running after the stop')
    if (running.length > 0 && !this.#stopCall) this.#stop(running)
    if (this.record.autoRemove) await removeLeftovers(this.record, seen, this.#tally, () => this.#engine.options())
  }

  /** The engine's stop with what is left of the grace, in whole seconds; the next observation waits for it. */
  #stop(ids: string[]): void {
    const seconds = Math.max(0, Math.floor((this.#graceUntil - now() - ENGINE_RESERVE_MS) / 1000))
    logEvent(this.options.logger, 'info', 'container.stop', { ...this.fields, ids, seconds })
    this.#stopped = true
    const call = this.#engine.track('stop', ({ timeoutMs, signal }) => stopContainers(this.record, ids, seconds, timeoutMs! - seconds * 1000, signal), seconds * 1000)
    const failed = (err: unknown): void => {
      if (!this.#final && !isNoSuchContainer(err)) this.#stopError = asError(err)
    }
    this.#stopCall = call.then(() => {}, failed).finally(() => (this.#stopSettled = true))
  }

  async #kill(ids: string[], reason: string): Promise<void> {
    this.#killed = true
    this.#stopped = true
    logEvent(this.options.logger, 'warn', 'container.kill', { ...this.fields, ids, reason })
    try {
      await this.#engine.track('kill', (call) => killContainers(this.record, ids, call.timeoutMs, call.signal))
    } catch (err) {
      if (!this.#final && !isNoSuchContainer(err)) this.#stopError ??= asError(err)
    }
  }

  /** A call the stop's end cut short: the engine did not answer it within the stop's bound. */
  #unanswered(call: Call): void {
    const ms = Math.round(now() - call.since)
    const error = new TimeoutError(`${this.record.bin} ${call.what} did not answer within ${ms} ms (the stop's bound)`, ms)
    if (call.what !== 'ps' && call.what !== 'inspect') this.#stopError ??= error
    // A look overdue (far longer than the engine took to answer before) makes the last answer stale:
    // the engine stopped answering. One merely under way leaves the last answer standing.
    else if (ms > Math.max(OVERDUE_MIN_MS, 2 * this.#slowest)) this.#lookError = error
  }
}
