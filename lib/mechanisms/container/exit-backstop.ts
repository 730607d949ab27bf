/**
 * The containers' backstop on this process's 'exit' (which Node also emits after process.exit(),
 * an uncaught exception or an unhandled rejection): the kernel's death signal then takes the
 * container clients spawn() started, and their containers would run on. So, synchronously (no
 * event loop is left), the engine is told to kill whatever still runs under this process's owner
 * label: one listing and one kill per engine endpoint, each bounded.
 *
 * It cannot run when this process dies without running JavaScript (SIGKILL, an unhandled signal):
 * the `reapkit -- docker run ...` wrapper or `reapkit doctor` cover that.
 */
import type { ContainerRecord } from './stop'
import { OWNER_LABEL } from './command'

/** Bound of each synchronous engine call at exit. */
const EXIT_CALL_MS = 3000

/** The environment variables that choose an engine endpoint (with the client and its globals). */
const ENDPOINT_VARS = ['DOCKER_HOST', 'DOCKER_CONTEXT', 'DOCKER_CONFIG', 'CONTAINER_HOST', 'CONTAINER_CONNECTION', 'CONTAINERD_ADDRESS', 'CONTAINERD_NAMESPACE']

/** Records whose client has not exited yet. */
const live = new Set<ContainerRecord>()
let installed = false

/** Tracks `record` until its client exits (`release`). */
export function trackLiveContainer(record: ContainerRecord): void {
  live.add(record)
  if (!installed) {
    installed = true
    process.on('exit', killLiveContainersSync)
  }
}

/** The client of `record` has exited: its own-exit step takes over. */
export function releaseLiveContainer(record: ContainerRecord): void {
  live.delete(record)
}

function endpointKey(record: ContainerRecord): string {
  return JSON.stringify([record.bin, record.globals, record.cwd ?? null, ENDPOINT_VARS.map((v) => record.env[v] ?? null)])
}

/** Kills, through each endpoint, the running containers labelled with this process as owner. */
export function killLiveContainersSync(): void {
  if (live.size === 0) return
  const endpoints = new Map<string, ContainerRecord>()
  for (const record of live) endpoints.set(endpointKey(record), record)
  live.clear()
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { spawnSync } = require('node:child_process') as typeof import('node:child_process')
  for (const record of endpoints.values()) {
    const run = (args: string[]): string | null => {
      const r = spawnSync(record.bin, [...record.globals, ...args], { env: record.env, ...(record.cwd ? { cwd: record.cwd } : {}), encoding: 'utf8', timeout: EXIT_CALL_MS, killSignal: 'SIGKILL', windowsHide: true })
      return r.status === 0 ? r.stdout : null
    }
    const listed = run(['ps', '-q', '--no-trunc', '--filter', `label=${OWNER_LABEL}=${record.owner}`])
    const ids = (listed ?? '').split('\n').map((l) => l.trim()).filter(Boolean)
    if (ids.length > 0) run(['kill', ...ids]) // with --rm the engine then removes them
  }
}
