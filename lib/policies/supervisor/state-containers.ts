/**
 * Containers in the Supervisor's state file. A child that is a container client (spawn()'s
 * SpawnedInfo.container) is recorded with its run label and how to reach its engine. A supervisor
 * that dies without stopping it (SIGKILL, OOM) loses the client to the kernel's death signal, but
 * the container belongs to the engine's daemon and runs on: the next incarnation on the file stops
 * it through the engine, found by the run label (the exact key).
 *
 * Proof, on top of the file's own trust (state-file-trust.ts, and the file's writer being gone):
 * only containers that carry both the recorded `reapkit.run` and `reapkit.owner` labels are stopped;
 * a container with the run's label and another owner is left alone and reported. Only the
 * variables that reach an engine are written from the client's environment, never the rest of it
 * (secrets stay out of the file).
 */
import { KILL_CONFIRM_MS_DEFAULT } from '../../ground/config'
import { type Logger, logEvent } from '../../ground/logger'
import { type ContainerEngine, OWNER_LABEL, parseContainerRun, RUN_LABEL } from '../../mechanisms/container/command'
import { engineCall } from '../../mechanisms/container/engine'
import { ownerNamespace, ownPidNamespace, parseOwner } from '../../mechanisms/container/owner'
import { type ContainerOutcome, type ContainerRecord, stopContainerRun } from '../../mechanisms/container/stop'

/** A container run as the state file holds it. */
export interface StateContainer {
  engine: ContainerEngine
  bin: string
  globals: string[]
  /** The client's environment, only the variables in ENGINE_ENV. */
  env: Record<string, string>
  cwd?: string
  runId: string
  owner: string
  autoRemove: boolean
}

/** What docker, podman and nerdctl read to find their daemon or store (no credentials). */
const ENGINE_ENV = new Set(
  (
    'PATH HOME USER LOGNAME TMPDIR SSH_AUTH_SOCK XDG_RUNTIME_DIR XDG_CONFIG_HOME XDG_DATA_HOME ' +
    'DOCKER_HOST DOCKER_CONTEXT DOCKER_CONFIG DOCKER_CERT_PATH DOCKER_TLS DOCKER_TLS_VERIFY DOCKER_API_VERSION ' +
    'CONTAINER_HOST CONTAINER_CONNECTION CONTAINER_SSHKEY CONTAINERS_CONF CONTAINERS_STORAGE_CONF ' +
    'CONTAINERD_ADDRESS CONTAINERD_NAMESPACE NERDCTL_TOML'
  ).split(' '),
)

const RUN_ID_RE = /^[0-9a-f][0-9a-f-]{30,35}$/i

/** The state file's form of a live run's record. */
export function toStateContainer(record: ContainerRecord): StateContainer {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(record.env)) if (ENGINE_ENV.has(k) && typeof v === 'string') env[k] = v
  return {
    engine: record.engine,
    bin: record.bin,
    globals: [...record.globals],
    env,
    ...(record.cwd !== undefined ? { cwd: record.cwd } : {}),
    runId: record.runId,
    owner: record.owner,
    autoRemove: record.autoRemove,
  }
}

const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string')

/**
 * A recorded run read back, or null when it is not one: `bin` and `globals` must still be a
 * container client's (what spawn() would have recognized), so the file can name no other program.
 */
export function parseStateContainer(raw: unknown): StateContainer | null {
  if (raw === null || typeof raw !== 'object') return null
  const c = raw as Partial<Record<keyof StateContainer, unknown>>
  if (typeof c.bin !== 'string' || !strings(c.globals) || typeof c.runId !== 'string' || typeof c.owner !== 'string') return null
  if (!RUN_ID_RE.test(c.runId) || parseOwner(c.owner) === null || typeof c.autoRemove !== 'boolean') return null
  if (c.cwd !== undefined && typeof c.cwd !== 'string') return null
  const run = parseContainerRun(c.bin, [...c.globals, 'run', 'image'])
  if (run === null || run.engine !== c.engine || run.globals.length !== c.globals.length) return null
  const env: Record<string, string> = {}
  if (c.env !== null && typeof c.env === 'object') {
    for (const [k, v] of Object.entries(c.env)) if (ENGINE_ENV.has(k) && typeof v === 'string') env[k] = v
  }
  return { engine: run.engine, bin: c.bin, globals: c.globals, env, ...(c.cwd !== undefined ? { cwd: c.cwd } : {}), runId: c.runId, owner: c.owner, autoRemove: c.autoRemove }
}

/** The engine's ids of the run's containers, with (`owner`) or without the owner label too. */
async function listIds(c: StateContainer, owner: boolean): Promise<string[]> {
  const filters = ['--filter', `label=${RUN_LABEL}=${c.runId}`, ...(owner ? ['--filter', `label=${OWNER_LABEL}=${c.owner}`] : [])]
  const out = await engineCall(c, ['ps', '-a', '-q', '--no-trunc', ...filters])
  return out.split('\n').map((l) => l.trim()).filter(Boolean)
}

/**
 * A previous incarnation's container step: resolve by the run label, check every container of the
 * run carries the recorded owner, and that the owner was in this process's PID namespace (the file
 * may be shared with a sandbox: a predecessor in another namespace is not known gone from here,
 * whatever its pid says), then the container step of a stop (stop.ts). Never rejects.
 */
export async function stopLeftoverContainer(c: StateContainer, options: { graceMs: number; logger: Logger }): Promise<ContainerOutcome> {
  const base = { engine: c.engine, runId: c.runId }
  let all: string[]
  let owned: string[]
  try {
    ;[all, owned] = await Promise.all([listIds(c, false), listIds(c, true)])
  } catch (err) {
    return { ...base, ids: [], state: 'uncertain', survivors: [], stopped: false, error: err as Error }
  }
  const owner = parseOwner(c.owner)!
  // 'unrecorded' (a four-field label) goes on to the stop below, on the file's word (its writer is
  // gone, and every container of the run carries this exact owner). A label written by this
  // version never is one on Linux: ownerOf() always names a namespace there, even under another
  // namespace's /proc (`pidns:-` when unreadable, which is 'other'). Four fields come only from a
  // state file written by an older reapkit, which left the field out under a /proc not its own
  // (its pid then a number of a child namespace): such a run is stopped as before, trusting the
  // file's writer check; on macOS there are no PID namespaces to confuse.
  if (all.length > 0 && ownerNamespace(owner) === 'other') {
    logEvent(options.logger, 'warn', 'state.container-other-namespace', { runId: c.runId, ids: all, pidNamespace: owner.pidNamespace })
    const here = ownPidNamespace() ?? 'a namespace that cannot be read'
    return { ...base, ids: all, state: 'survived', survivors: all, stopped: false, error: new Error(`owner in another PID namespace: not judged (run ${c.runId}'s owner, pid ${owner.pid}, is in ${owner.pidNamespace}; this process is in ${here}): not stopped`) }
  }
  const strangers = all.filter((id) => !owned.includes(id))
  if (strangers.length > 0) {
    // Someone else's container with our run label: never stopped on the file's word.
    logEvent(options.logger, 'warn', 'state.container-unproven', { runId: c.runId, ids: strangers })
    return { ...base, ids: all, state: 'survived', survivors: strangers, stopped: false, error: new Error(`containers of run ${c.runId} carry another owner than recorded: not stopped`) }
  }
  // By the ids just listed (inspect), not listed a second time by the label: the predecessor is gone, so no create of its run is still to come.
  return stopContainerRun({ ...c, env: { ...c.env } }, { graceMs: options.graceMs, confirmMs: KILL_CONFIRM_MS_DEFAULT, logger: options.logger, ids: all })
}
