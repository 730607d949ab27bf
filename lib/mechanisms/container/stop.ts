/**
 * The container step of a stop: everything one run put in the engine, ended through the engine and
 * confirmed gone through it (issue 18's contract, the "container" row of DESIGN.md's unit of a stop).
 *
 *   resolve   the run's containers, by its `reapkit.run` label (all, and the running ones);
 *   signal    the engine's own stop with the grace (`stop -t`: STOPSIGNAL, then its SIGKILL);
 *   escalate  the engine's kill of what still runs; with `--rm`, `rm -f` of an exited leftover
 *             (podman's own cleanup died with its client);
 *   confirm   bounded looks: with `--rm`, gone once nothing is listed; without, once nothing listed
 *             runs (the stopped container stays, as the user asked);
 *   report    'gone', 'survived' (with the ids), or 'uncertain' when the engine did not answer:
 *             a daemon that cannot be reached is never read as "gone".
 *
 * The whole step has one deadline, grace + confirm + a small slack: a hung engine costs no more
 * than that, each call bounded by what is left of it.
 */
import { type Logger, logEvent } from '../../ground/logger'
import { type ContainerEngine, RUN_LABEL } from './command'
import { type EngineClient, ENGINE_CALL_MS_DEFAULT, isNoSuchContainer, killContainers, listByLabel, listRun, removeContainers, stopContainers } from './engine'

/** What spawn() recorded of a container run (SpawnedInfo.container). */
export interface ContainerRecord extends EngineClient {
  /** The run's `reapkit.run` label value: the container is found by it. */
  runId: string
  /** The run's `reapkit.owner` label value (owner.ts). */
  owner: string
  /** The run had `--rm`: the container is gone only once removed. */
  autoRemove: boolean
}

/** How the container step of one stop ended. */
export interface ContainerOutcome {
  engine: ContainerEngine
  runId: string
  /** Every container the run had when the step began (full ids; empty: none was there). */
  ids: string[]
  /**
   * 'gone': confirmed by the engine (removed with `--rm`, not running without); 'survived': still
   * there at the end of the confirm bound (see `survivors`); 'uncertain': the engine did not answer
   * (see `error`), so nothing is known.
   */
  state: 'gone' | 'survived' | 'uncertain'
  /** Ids not confirmed gone (empty when 'gone'; what was last seen, or `ids`, otherwise). */
  survivors: string[]
  /** True when a container was still running and the engine was told to stop it (removing an exited `--rm` leftover is not stopping). */
  stopped: boolean
  /** The engine's error that left the step uncertain (or that came with survivors). */
  error?: Error
}

export interface ContainerStopOptions {
  /** The stop's grace, in ms: the engine's stop gets it less a second, in whole seconds (rounded down). */
  graceMs: number
  /** After the stop, how long to look for the containers to be gone. */
  confirmMs: number
  /** Ends the grace at once: the engine's kill (or `rm -f`) now. */
  abortSignal?: AbortSignal
  /** Bound of each engine call that does not wait on a container (less when the step's deadline is nearer). Default 10000. */
  callTimeoutMs?: number
  /**
   * When the first look finds nothing, look once more after this long before saying 'gone': a
   * client killed in the middle of its create leaves the engine to finish it (a `created`
   * container, removed then). 0 (the default) for a client that exited by itself: it saw its
   * container end.
   */
  settleMs?: number
  logger?: Logger
}

/**
 * What the engine's stop leaves of the grace for the engine's own work (its kill, the exit, the
 * removal with --rm): the container is then gone about when a process group would be, and the
 * callers' bounds (shutdownAll's close + grace + 1 s) hold.
 */
const ENGINE_RESERVE_MS = 1000

/** How often the confirm step looks again. */
const CONFIRM_POLL_MS = 200

/** What the step's deadline adds to grace + confirm, for the first look and the engine's own work. */
const DEADLINE_SLACK_MS = 2500
/** The least an engine call is given, however near the deadline. */
const MIN_CALL_MS = 250

/** The step's deadline, and each call's bound under it. */
interface Budget {
  deadline: number
  /** min(the call bound, what is left), at least MIN_CALL_MS. */
  call(): number
}

function budgetOf(options: ContainerStopOptions): Budget {
  const callMs = options.callTimeoutMs ?? ENGINE_CALL_MS_DEFAULT
  const budget: Budget = {
    deadline: now() + Math.max(0, options.graceMs) + Math.max(0, options.confirmMs) + DEADLINE_SLACK_MS,
    call: () => Math.max(MIN_CALL_MS, Math.min(callMs, budget.deadline - now())),
  }
  return budget
}

interface Look {
  all: string[]
  running: string[]
}

const now = (): number => performance.now()
const sleep = (ms: number): Promise<void> => new Promise((res) => setTimeout(res, ms))
const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)))

/** Resolve: the run's containers (all of them, and those running). */
async function look(record: ContainerRecord, timeoutMs: number): Promise<Look> {
  // Both calls settle before the look does: a step never ends with an engine call still running.
  const [all, running] = await Promise.allSettled([listRun(record, record.runId, { timeoutMs }), listRun(record, record.runId, { all: false, timeoutMs })])
  if (all.status === 'rejected') throw all.reason
  if (running.status === 'rejected') throw running.reason
  return { all: all.value, running: running.value }
}

/** What still keeps the run from being gone. */
const remaining = (record: ContainerRecord, seen: Look): string[] => (record.autoRemove ? seen.all : seen.running)

/**
 * Escalate: the engine's kill of what runs. Never `rm -f` of a running container: podman 4 removes
 * the record of a container that a stop is ending without killing it (its conmon and PID 1 run on,
 * unlisted). Errors are the confirm's to judge.
 */
async function force(record: ContainerRecord, running: readonly string[], timeoutMs: number): Promise<Error | undefined> {
  try {
    await killContainers(record, running, timeoutMs)
    return undefined
  } catch (err) {
    return isNoSuchContainer(err) ? undefined : asError(err)
  }
}

/**
 * With --rm, a leftover that is not running on two looks in a row (docker removes its own a moment
 * after the exit; podman's cleanup may have died with its client; one never started) is removed:
 * killed first, since podman 4 lists a container a dead stop left 'stopping' as not running, and
 * its `rm -f` would drop the record and leave the processes.
 */
async function removeLeftovers(record: ContainerRecord, seen: Look, tally: Map<string, number>, timeoutMs: number): Promise<void> {
  const leftovers: string[] = []
  for (const id of seen.all) {
    if (seen.running.includes(id)) continue
    const looks = (tally.get(id) ?? 0) + 1
    tally.set(id, looks)
    if (looks === 2) leftovers.push(id)
  }
  if (leftovers.length === 0) return
  await killContainers(record, leftovers, timeoutMs).catch(() => {}) // "not running": as expected
  await removeContainers(record, leftovers, timeoutMs).catch(() => {}) // the engine may be removing it already: the looks judge
}

/** Confirm: looks until nothing remains or `deadline`, killing once what the stop left running. */
async function confirm(record: ContainerRecord, deadline: number, budget: Budget, forced: { done: boolean }): Promise<{ left: string[] | null; error?: Error }> {
  let error: Error | undefined
  const notRunning = new Map<string, number>()
  for (;;) {
    let seen: Look | null = null
    try {
      seen = await look(record, budget.call())
      error = undefined
    } catch (err) {
      error = asError(err)
    }
    const left = seen ? remaining(record, seen) : null
    if (left !== null && left.length === 0) return { left }
    if (now() >= deadline) return { left, ...(error ? { error } : {}) }
    if (seen && seen.running.length > 0 && !forced.done) {
      forced.done = true
      error = await force(record, seen.running, budget.call())
      continue
    }
    if (seen && record.autoRemove) await removeLeftovers(record, seen, notRunning, budget.call())
    await sleep(CONFIRM_POLL_MS)
  }
}

/**
 * Signal: the engine's stop with the grace in whole seconds. When `abortSignal` fires first, the
 * grace is over: the engine's kill, now (the stop then returns as the container exits). Resolves
 * to the stop's error, if any.
 */
async function signal(record: ContainerRecord, first: Look, options: ContainerStopOptions, forced: { done: boolean }, budget: Budget): Promise<Error | undefined> {
  const seconds = Math.max(0, Math.floor((options.graceMs - ENGINE_RESERVE_MS) / 1000))
  logEvent(options.logger, 'info', 'container.stop', { engine: record.engine, runId: record.runId, ids: first.running, seconds })
  let forcing: Promise<unknown> = Promise.resolve()
  const onAbort = (): void => {
    forced.done = true
    logEvent(options.logger, 'warn', 'container.kill', { engine: record.engine, runId: record.runId, ids: first.running, reason: 'grace ended early' })
    forcing = force(record, first.running, budget.call())
  }
  if (options.abortSignal?.aborted) onAbort()
  else options.abortSignal?.addEventListener('abort', onAbort, { once: true })
  try {
    await stopContainers(record, first.running, seconds, Math.max(MIN_CALL_MS, budget.call() - seconds * 1000))
    return undefined
  } catch (err) {
    return isNoSuchContainer(err) ? undefined : asError(err)
  } finally {
    options.abortSignal?.removeEventListener('abort', onAbort)
    await forcing
  }
}

/**
 * Resolve, with a second look after `settleMs` when the first finds nothing: a container the
 * engine created after its client died mid-create shows up then; one left `created` (never
 * started) is removed at once (`rm -f` of a container that never ran ends nothing).
 */
async function resolve(record: ContainerRecord, options: ContainerStopOptions, budget: Budget): Promise<Look> {
  const first = await look(record, budget.call())
  if (first.all.length > 0 || !options.settleMs) return first
  await sleep(options.settleMs)
  budget.deadline += options.settleMs // the wait is not the engine's time
  const again = await look(record, budget.call())
  if (again.all.length === 0) return again
  const created = await listByLabel(record, `${RUN_LABEL}=${record.runId}`, { status: 'created', timeoutMs: budget.call() }).catch((): string[] => [])
  if (created.length === 0) return again
  logEvent(options.logger, 'info', 'container.created', { engine: record.engine, runId: record.runId, ids: created })
  await removeContainers(record, created, budget.call()).catch(() => {}) // the confirm's looks judge
  return record.autoRemove ? again : { all: again.all, running: again.running.filter((id) => !created.includes(id)) }
}

/** The container step of a stop, for one run. Never rejects: the outcome says what is known. */
export async function stopContainerRun(record: ContainerRecord, options: ContainerStopOptions): Promise<ContainerOutcome> {
  const budget = budgetOf(options)
  const { logger } = options
  const base = { engine: record.engine, runId: record.runId }
  const report = (outcome: ContainerOutcome): ContainerOutcome => {
    const level = outcome.state === 'gone' ? 'info' : outcome.state === 'survived' ? 'error' : 'warn'
    logEvent(logger, level, `container.${outcome.state}`, { ...outcome, error: outcome.error ? String(outcome.error) : undefined })
    return outcome
  }
  let first: Look
  try {
    first = await resolve(record, options, budget)
  } catch (err) {
    return report({ ...base, ids: [], state: 'uncertain', survivors: [], stopped: false, error: asError(err) })
  }
  const ids = first.all
  // Nothing there (or, without --rm, nothing running): gone. An exited --rm leftover (podman's own
  // cleanup died with its client) is removed by the confirm step.
  if (remaining(record, first).length === 0) return report({ ...base, ids, state: 'gone', survivors: [], stopped: false })
  const stopped = first.running.length > 0
  const forced = { done: false }
  let stopError: Error | undefined
  if (first.running.length > 0) stopError = await signal(record, first, options, forced, budget)
  const { left, error } = await confirm(record, Math.min(budget.deadline, now() + options.confirmMs), budget, forced)
  if (left !== null && left.length === 0) return report({ ...base, ids, state: 'gone', survivors: [], stopped })
  if (left === null) return report({ ...base, ids, state: 'uncertain', survivors: ids, stopped, error: error ?? stopError ?? new Error('the engine did not answer') })
  const why = error ?? stopError
  return report({ ...base, ids, state: 'survived', survivors: left, stopped, ...(why ? { error: why } : {}) })
}
