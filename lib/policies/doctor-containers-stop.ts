/**
 * stopLeakedContainers(): ends the containers findLeakedContainers() listed as leaked, each by its
 * id through its own engine (the client's environment for a client's container), in the named
 * steps of the container stop (issue 18's contract):
 *
 *   signal    the engine's stop with the grace (`stop -t`: STOPSIGNAL, then its SIGKILL);
 *   escalate  the engine's kill of what still runs; with `--rm`, `rm -f` of an exited leftover;
 *   confirm   bounded looks: with `--rm`, gone once the engine has no such container; without,
 *             once it no longer runs (the stopped container stays, as its owner asked);
 *   report    'gone', 'survived', or 'uncertain' when the engine did not answer (never "gone").
 *
 * `foreign` containers (another host's owner) are never passed here by the CLI, and never taken
 * from a report: only `leaked` is read.
 */
import { typeError } from '../ground/errors'
import { validateMs, validateOptions } from '../ground/validate'
import { containerStatus, type EngineClient, ENGINE_CALL_MS_DEFAULT, isNoSuchContainer, killContainers, removeContainers, stopContainers } from '../mechanisms/container/engine'
import type { ContainerEngine } from '../mechanisms/container/command'
import { type ContainerReport, engineClientOf, type LeakedContainer } from './doctor-containers'

export interface StopContainersOptions {
  /** The engine's stop grace (whole seconds are given to it, rounded down). Default 5000. */
  graceMs?: number
  /** After the stop, how long to look for the container to be gone. Default 10000. */
  confirmMs?: number
}

export interface StoppedContainer {
  engine: ContainerEngine
  id: string
  name: string
  /** 'gone': confirmed by the engine; 'survived': still there at the end; 'uncertain': the engine did not answer. */
  state: 'gone' | 'survived' | 'uncertain'
  /** The engine's error behind 'uncertain' or 'survived'. */
  error?: string
}

const POLL_MS = 200
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const message = (err: unknown): string => (err instanceof Error ? err.message : String(err))
const RUNNING = new Set(['running', 'paused', 'restarting', 'stopping'])

/** Gone as its owner asked: removed with --rm, not running without. */
const done = (c: LeakedContainer, status: string): boolean => status === 'gone' || (!c.autoRemove && !RUNNING.has(status))

/** Signal: the engine's stop with the grace; its error, unless the container is already gone. */
async function signal(client: EngineClient, c: LeakedContainer, graceMs: number): Promise<string | undefined> {
  try {
    await stopContainers(client, [c.id], Math.floor(graceMs / 1000))
    return undefined
  } catch (err) {
    return isNoSuchContainer(err) ? undefined : message(err)
  }
}

/** Confirm: looks until done or the deadline; kills once what still runs, removes an exited --rm leftover once. */
async function confirm(client: EngineClient, c: LeakedContainer, deadline: number): Promise<{ status: string | null; error?: string }> {
  let killed = false
  let removed = false
  let error: string | undefined
  for (;;) {
    let status: string | null = null
    try {
      status = await containerStatus(client, c.id, Math.max(1000, Math.min(ENGINE_CALL_MS_DEFAULT, deadline - performance.now())))
      error = undefined
    } catch (err) {
      error = message(err)
    }
    if (status !== null && done(c, status)) return { status }
    if (performance.now() >= deadline) return { status, ...(error ? { error } : {}) }
    if (status !== null && RUNNING.has(status) && !killed) {
      killed = true
      await killContainers(client, [c.id]).catch(() => {}) // the next look judges
      continue
    }
    if (status !== null && c.autoRemove && !RUNNING.has(status) && !removed) {
      removed = true
      await removeContainers(client, [c.id]).catch(() => {}) // docker may be removing it already
      continue
    }
    await sleep(POLL_MS)
  }
}

function checkOptions(options: StopContainersOptions): { graceMs: number; confirmMs: number } {
  options = validateOptions(options)
  return { graceMs: validateMs(options.graceMs, 'graceMs') ?? 5000, confirmMs: validateMs(options.confirmMs, 'confirmMs') ?? 10_000 }
}

/** Stops one leaked container (findLeakedContainers().leaked[i]). Never rejects once the options are read: the result says what is known. */
export async function stopLeakedContainer(c: LeakedContainer, options: StopContainersOptions = {}): Promise<StoppedContainer> {
  const opts = checkOptions(options)
  if (typeof c?.id !== 'string' || typeof c.engine !== 'string') throw typeError('ERR_INVALID_ARG_TYPE', 'stopLeakedContainer() takes a container of a findLeakedContainers() report')
  return stopOne(c, opts)
}

async function stopOne(c: LeakedContainer, { graceMs, confirmMs }: { graceMs: number; confirmMs: number }): Promise<StoppedContainer> {
  const client = engineClientOf(c) ?? { engine: c.engine, bin: c.engine, globals: [], env: process.env }
  const base = { engine: c.engine, id: c.id, name: c.name }
  let first: string
  try {
    first = await containerStatus(client, c.id)
  } catch (err) {
    return { ...base, state: 'uncertain', error: message(err) }
  }
  if (done(c, first)) return { ...base, state: 'gone' }
  const stopError = RUNNING.has(first) ? await signal(client, c, graceMs) : undefined
  const { status, error } = await confirm(client, c, performance.now() + confirmMs)
  if (status !== null && done(c, status)) return { ...base, state: 'gone' }
  const why = error ?? stopError
  return { ...base, state: status === null ? 'uncertain' : 'survived', ...(why ? { error: why } : {}) }
}

/** Stops every leaked container of a report, all at once; one result each. `foreign` is never touched. */
export async function stopLeakedContainers(report: Pick<ContainerReport, 'leaked'>, options: StopContainersOptions = {}): Promise<StoppedContainer[]> {
  const opts = checkOptions(options)
  if (!Array.isArray(report?.leaked)) throw typeError('ERR_INVALID_ARG_TYPE', 'stopLeakedContainers() takes a findLeakedContainers() report')
  return Promise.all(report.leaked.map((c) => stopOne(c, opts)))
}
