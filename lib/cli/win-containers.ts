/**
 * The container part of `reapkit-win` (bin/reapkit-win.cjs, the `reapkit` command on Windows),
 * built to dist/cjs/reapkit-win-containers.js (scripts/build-ts.mjs) and loaded by that script.
 *
 * `reapkit-win -- docker run -i --rm IMAGE` runs the docker client in reapkit-job.exe's job, and
 * ending the job ends the client, not the container: on Windows the container belongs to Docker
 * Desktop's daemon. So a run is recognized and labelled exactly as the library's spawn() does it
 * (mechanisms/container/child.ts: the same parser, the same `reapkit.run` and `reapkit.owner`
 * labels, the owner being reapkit-win's own process), and once the job has ended, whatever ended
 * it, the container is ended through the engine with the library's container stop (stop.ts: the
 * engine's stop with the grace, then its kill, `rm -f` of a `--rm` leftover, confirmed gone, each
 * call bounded), with the bounds the library gives a container whose client exited.
 */
import { KILL_CONFIRM_MS_DEFAULT, killGraceMs } from '../ground/config'
import { prepareContainerRun, SETTLE_MS } from '../mechanisms/container/child'
import { type ContainerOutcome, type ContainerRecord, stopContainerRun } from '../mechanisms/container/stop'

export type { ContainerOutcome, ContainerRecord }

/**
 * When `program args` is a container run (`program`: the file reapkit-win resolved, which the
 * engine calls use too): the args with reapkit's labels and the run's record; else null, and the
 * command runs as a plain one.
 */
export function containerRunOf(program: string, args: readonly string[]): { args: string[]; record: ContainerRecord } | null {
  return prepareContainerRun(program, args, { env: process.env, cwd: process.cwd() })
}

/** What reapkit-win knows of the end of the run's client. */
export interface JobEnd {
  /**
   * The client may have been cut short (the job was ended: the host died, or a close): it may have
   * asked for its container just before, so a first look that finds nothing looks once more.
   */
  clientKilled: boolean
  /** Ends the grace at once: the engine's kill now (a Ctrl+C, or the console closing, during the stop). */
  abortSignal?: AbortSignal
}

/** The run's container ended through its engine; resolves to its outcome (never rejects). */
export function endContainerRun(record: ContainerRecord, end: JobEnd): Promise<ContainerOutcome> {
  return stopContainerRun(record, {
    graceMs: killGraceMs(),
    confirmMs: KILL_CONFIRM_MS_DEFAULT,
    settleMs: end.clientKilled ? SETTLE_MS : 0,
    abortSignal: end.abortSignal,
  })
}

/** What to print on stderr about an outcome: nothing when the container is confirmed gone, else each id not. */
export function outcomeReport(record: ContainerRecord, outcome: ContainerOutcome): string {
  if (outcome.state === 'gone') return ''
  const label = `reapkit.run=${record.runId}`
  if (outcome.state === 'uncertain') {
    const ids = outcome.survivors.length > 0 ? ` (${outcome.survivors.join(', ')})` : ` (label ${label})`
    return `reapkit-win: ${record.engine} did not answer${outcome.error ? ` (${outcome.error.message})` : ''}: the container of this run${ids} may still be running\n`
  }
  const still = record.autoRemove ? 'there' : 'running'
  return outcome.survivors.map((id) => `reapkit-win: container ${id} (${record.engine}) is still ${still} after the engine's stop and kill\n`).join('')
}
