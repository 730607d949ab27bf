/**
 * The containers' backstop on this process's 'exit' (which Node also emits after process.exit(),
 * an uncaught exception or an unhandled rejection): the kernel's death signal then takes the
 * container clients spawn() started, and their containers would run on. So, synchronously (no
 * event loop is left), the engine is told to kill them: per engine endpoint, one listing of what
 * runs under this process's owner label and one kill, each call bounded, all of them within one
 * total bound.
 *
 * On the main thread the whole process is ending: everything under its owner label goes, the
 * containers of worker threads too (a worker's own 'exit' does not run when the process ends or
 * the worker is terminated). A worker's process.exit() ends only that worker: only the runs its
 * own module instance tracks go (the main thread's, under the same owner label, run on).
 *
 * It cannot run when this process dies without running JavaScript (SIGKILL, an unhandled signal):
 * the `reapkit -- docker run ...` wrapper or `reapkit doctor` cover that.
 */
import type { ContainerRecord } from './stop'
import { OWNER_LABEL, RUN_LABEL } from './command'

/** Bound of each synchronous engine call at exit. */
const EXIT_CALL_MS = 3000
/** Bound of the whole backstop, whatever the number of endpoints: an exit must not hang on engines. */
const EXIT_TOTAL_MS = 5000
/** Less time left than this: the call is not made. */
const EXIT_CALL_MIN_MS = 200

/** The environment variables that choose an engine endpoint (with the client and its globals). */
const ENDPOINT_VARS = ['DOCKER_HOST', 'DOCKER_CONTEXT', 'DOCKER_CONFIG', 'CONTAINER_HOST', 'CONTAINER_CONNECTION', 'CONTAINERD_ADDRESS', 'CONTAINERD_NAMESPACE']

/** Records whose client has not exited yet, or whose stop step has not confirmed them gone. */
const live = new Set<ContainerRecord>()
let installed = false

/** Tracks `record` until `release`. */
export function trackLiveContainer(record: ContainerRecord): void {
  live.add(record)
  if (!installed) {
    installed = true
    process.on('exit', killLiveContainersSync)
  }
}

/** `record` needs no backstop any more (its client exited and its step confirmed it gone). */
export function releaseLiveContainer(record: ContainerRecord): void {
  live.delete(record)
}

function endpointKey(record: ContainerRecord): string {
  return JSON.stringify([record.bin, record.globals, record.cwd ?? null, record.owner, ENDPOINT_VARS.map((v) => record.env[v] ?? null)])
}

const lines = (out: string | null): string[] => (out ?? '').split('\n').map((l) => l.trim()).filter(Boolean)

/** Kills, through each endpoint, the running containers this process (main thread) or this worker owns. */
export function killLiveContainersSync(): void {
  if (live.size === 0) return
  const deadline = Date.now() + EXIT_TOTAL_MS
  const endpoints = new Map<string, ContainerRecord[]>()
  for (const record of live) endpoints.set(endpointKey(record), [...(endpoints.get(endpointKey(record)) ?? []), record])
  live.clear()
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { isMainThread } = require('node:worker_threads') as typeof import('node:worker_threads')
  for (const records of endpoints.values()) killAtEndpoint(records, deadline, isMainThread)
}

/** One endpoint: list what runs under the owner label, keep a worker's own runs only, kill. */
function killAtEndpoint(records: ContainerRecord[], deadline: number, wholeProcess: boolean): void {
  const record = records[0]!
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { spawnSync } = require('node:child_process') as typeof import('node:child_process')
  const run = (args: string[], anyStatus = false): string | null => {
    const left = deadline - Date.now()
    if (left < EXIT_CALL_MIN_MS) return null
    const r = spawnSync(record.bin, [...record.globals, ...args], { env: record.env, ...(record.cwd ? { cwd: record.cwd } : {}), encoding: 'utf8', timeout: Math.min(EXIT_CALL_MS, left), killSignal: 'SIGKILL', windowsHide: true })
    return r.status === 0 || (anyStatus && r.signal === null) ? r.stdout : null
  }
  let ids = lines(run(['ps', '-q', '--no-trunc', '--filter', `label=${OWNER_LABEL}=${record.owner}`]))
  if (!wholeProcess && ids.length > 0) {
    // A container gone between the listing and this look makes the engine exit non-zero: the others are still printed.
    const mine = new Set(records.map((r) => r.runId))
    const seen = lines(run(['inspect', '--format', `{{.Id}} {{index .Config.Labels "${RUN_LABEL}"}}`, ...ids], true))
    ids = seen.map((l) => l.split(' ')).filter(([, runId]) => runId !== undefined && mine.has(runId)).map(([id]) => id!)
  }
  if (ids.length > 0) run(['kill', ...ids]) // with --rm the engine then removes them
}
