/**
 * findLeakedContainers(): the containers that nothing will stop any more, listed apart from the
 * process trees (issue 18's contract):
 *
 * - every container carrying `reapkit.owner` whose owner is gone (owner.ts's ownerVerdict: this host,
 *   and an earlier boot of this machine (its machine id, and the engine's creation time before this
 *   boot), or the pid dead, or the pid now another process), on every engine that
 *   answers (docker, podman, nerdctl; one that is not installed or does not answer is skipped and
 *   said so, never an error that hides the rest). An owner on another host, or in another PID
 *   namespace, cannot be judged here: such containers are listed apart (`foreign`) and never stopped;
 * - the container of each `docker run`/`podman run` client in an orphaned tree, where it can be
 *   told exactly (./clients.ts); where it cannot, the client is listed saying so. Exactly
 *   means on the engine's own record: the container carries the run label the client names; the
 *   engine names the client's conmon as the container's (podman's ConmonPid); a --cidfile only of
 *   doctor's own user (read by the trusted-file rules), never another user's; a --name where the
 *   engine (reached as the client's user) has a container of that very name created after the
 *   client started, whose record is what the client's argv runs (image, command, -i, --rm: its own
 *   may have been renamed and the name taken since).
 *
 * Never listed: a container whose owner is alive, one without reapkit's labels whose client is not
 * an orphan (a `-d` run, any run whose host lives). Never signals, never stops.
 */
import { typeError } from '../../ground/errors'
import { validateMs, validateOptions } from '../../ground/validate'
import { type ContainerEngine, OWNER_LABEL, RUN_LABEL } from '../../mechanisms/container/command'
import { type EngineClient, EngineError, ENGINE_CALL_MS_DEFAULT, listByLabel } from '../../mechanisms/container/engine'
import { type ContainerOwner, ownerVerdict, ownPidNamespace, ownPidNamespaceLink, parseOwner } from '../../mechanisms/container/owner'
import type { OrphanTree } from './doctor'
import { type ClientFinding, findClients, type NamedRun } from './clients'
import { inspectContainers, type InspectedContainer } from './inspect'
import { CIDFILE, readTrustedFile } from '../state-file-trust'

export interface LeakedContainer {
  engine: ContainerEngine
  /** Full id. */
  id: string
  name: string
  image: string
  /** The engine's state: 'running', 'exited'... */
  state: string
  /** Started with `--rm`: the engine removes it once it exits. */
  autoRemove: boolean
  /** Its `reapkit.owner` label, parsed; null when it has none (a client's container found otherwise). */
  owner: ContainerOwner | null
  /** Its `reapkit.run` label, or null. */
  runId: string | null
  /** Why it is listed. */
  why: string
  /** The orphaned client (and the root of its tree) whose container this is, when found through one. */
  client?: { pid: number; root: number }
  /**
   * Found through another user's client, by doctor's own engine client run as that user: what the
   * engine said is what uid `asUser` was told at the endpoint it chose, and it is only ever stopped
   * the same way (never with doctor's own rights).
   */
  asUser?: number
}

/** An engine doctor asked: whether it answered, and if not, why it was skipped. */
export interface EngineScan {
  engine: ContainerEngine
  answered: boolean
  /** Why it was skipped ('not installed', or the engine's error). */
  reason?: string
}

/** A `docker run`/`podman run` client in an orphaned tree, and what is known of its container. */
export interface OrphanedClient {
  pid: number
  /** The root of the tree it is in (DoctorReport.trees). */
  root: number
  engine: ContainerEngine
  /** The container's id, when it could be told (then it is in `leaked`, `foreign`, or `note` says why not). */
  container: string | null
  /** How it was told: its reapkit.run label, its --cidfile, podman's conmon, its --name; null: it cannot be. */
  via: 'run-label' | 'cidfile' | 'conmon' | 'name' | null
  note: string
}

export interface ContainerReport {
  engines: EngineScan[]
  /** What `reapkit doctor --stop` stops. */
  leaked: LeakedContainer[]
  /** Owned by another host, or by a process in another PID namespace: not ours to judge; listed only, never stopped. */
  foreign: LeakedContainer[]
  /** Container clients in orphaned trees. */
  clients: OrphanedClient[]
}

export interface FindLeakedContainersOptions {
  /** The engines to ask. Default: docker, podman, nerdctl. */
  engines?: ContainerEngine[]
  /** Only containers that also carry every one of these labels (`key` or `key=value`). */
  labels?: string[]
  /** The orphaned trees whose container clients to look at (findOrphans().trees). Default none. */
  trees?: readonly OrphanTree[]
  /** The environment the engines' clients get (DOCKER_HOST, CONTAINER_HOST...). Default process.env. */
  env?: NodeJS.ProcessEnv
  /** Bound of each engine call. Default 10000. */
  timeoutMs?: number
}

const ENGINES: readonly ContainerEngine[] = ['docker', 'podman', 'nerdctl']

/** How to reach each listed container's engine (the client's own environment for a client's container); kept out of the JSON. */
const clientOf = new WeakMap<LeakedContainer, EngineClient>()
export const engineClientOf = (c: LeakedContainer): EngineClient | undefined => clientOf.get(c)

function checkOptions(options: FindLeakedContainersOptions): Required<Omit<FindLeakedContainersOptions, 'trees'>> & { trees: readonly OrphanTree[] } {
  options = validateOptions(options)
  const engines = options.engines ?? ENGINES
  if (!Array.isArray(engines) || !engines.every((e) => ENGINES.includes(e))) {
    throw typeError('ERR_INVALID_ARG_TYPE', 'The "engines" option must be an array of "docker", "podman", "nerdctl"')
  }
  const labels = options.labels ?? []
  if (!Array.isArray(labels) || !labels.every((l) => typeof l === 'string' && /^[^=\s]+(=.*)?$/.test(l))) {
    throw typeError('ERR_INVALID_ARG_TYPE', 'The "labels" option must be an array of "key" or "key=value" strings')
  }
  const trees = options.trees ?? []
  if (!Array.isArray(trees) || !trees.every((t) => typeof t === 'object' && t !== null && Array.isArray((t as OrphanTree).processes))) {
    throw typeError('ERR_INVALID_ARG_TYPE', 'The "trees" option must be an array of trees (findOrphans().trees)')
  }
  const env = options.env ?? process.env
  if (typeof env !== 'object' || env === null) throw typeError('ERR_INVALID_ARG_TYPE', 'The "env" option must be an object')
  return { engines: [...new Set(engines)], labels, trees, env, timeoutMs: validateMs(options.timeoutMs, 'timeoutMs') ?? ENGINE_CALL_MS_DEFAULT }
}

/** Carries every label asked for. */
function matches(c: InspectedContainer, labels: readonly string[]): boolean {
  return labels.every((l) => {
    const eq = l.indexOf('=')
    return eq < 0 ? Object.hasOwn(c.labels, l) : c.labels[l.slice(0, eq)] === l.slice(eq + 1)
  })
}

/** Still there to be ended: running (or paused...), or, with --rm, there at all (podman's cleanup may have died with its client). */
const lingering = (c: InspectedContainer): boolean => (c.autoRemove ? c.state !== 'removing' : ['running', 'paused', 'restarting', 'stopping'].includes(c.state))

/** The initial PID namespace (the kernel's PROC_PID_INIT_INO): owners' pids are written as seen from there, as a rule. */
const INIT_PID_NS = 'pidns:4026531836'

/**
 * Is doctor in a child PID namespace, or under a /proc of another namespace than its own (where no
 * pid can be looked up as written)? There an unlabelled owner's pid may name a process outside.
 */
function inChildPidNamespace(): boolean {
  const raw = ownPidNamespaceLink() // our own even through another namespace's /proc
  return raw !== null && (raw !== INIT_PID_NS || ownPidNamespace() === null)
}

function describe(engine: ContainerEngine, c: InspectedContainer, why: string): LeakedContainer {
  const owner = c.labels[OWNER_LABEL] !== undefined ? parseOwner(c.labels[OWNER_LABEL]) : null
  return { engine, id: c.id, name: c.name, image: c.image, state: c.state, autoRemove: c.autoRemove, owner, runId: c.labels[RUN_LABEL] ?? null, why }
}

/** The containers with an owner label on one engine; a skip (with why) when it does not answer. */
async function scanEngine(client: EngineClient, timeoutMs: number): Promise<{ scan: EngineScan; found: InspectedContainer[] }> {
  try {
    const ids = await listByLabel(client, OWNER_LABEL, { timeoutMs })
    return { scan: { engine: client.engine, answered: true }, found: await inspectContainers(client, ids, timeoutMs) }
  } catch (err) {
    const notInstalled = err instanceof EngineError && (err.cause as { code?: unknown } | undefined)?.code === 'ENOENT'
    return { scan: { engine: client.engine, answered: false, reason: notInstalled ? 'not installed' : String((err as Error).message ?? err) }, found: [] }
  }
}

interface Listing {
  leaked: LeakedContainer[]
  foreign: LeakedContainer[]
  byId: Map<string, LeakedContainer>
}

/** Sorts one container by its owner: listed as leaked, as foreign, or not at all (owner alive, no owner). Returns where it went. */
function judge(listing: Listing, engine: ContainerEngine, c: InspectedContainer, client: EngineClient, extra?: { why: string; client: { pid: number; root: number } }): 'leaked' | 'foreign' | 'alive' | 'idle' {
  const asUser = client.user?.uid
  // What another user's endpoint says is theirs to say: it never adds to, nor stands for, an entry
  // of doctor's own (the same id there may be another container, or a lie).
  const key = asUser === undefined ? c.id : `${c.id}@${asUser}`
  const known = listing.byId.get(key)
  if (known) {
    if (extra && asUser === undefined) Object.assign(known, { why: `${known.why}; ${extra.why}`, client: extra.client })
    return listing.leaked.includes(known) ? 'leaked' : 'foreign'
  }
  if (!lingering(c)) return 'idle'
  const owner = c.labels[OWNER_LABEL] !== undefined ? parseOwner(c.labels[OWNER_LABEL]) : null
  // From a child PID namespace, a label that names none is not judged by its pid (ownerVerdict).
  const judged = owner ? ownerVerdict(owner, { unrecordedPid: !inChildPidNamespace(), ...(c.createdMs !== undefined ? { createdMs: c.createdMs } : {}) }) : null
  const status = judged?.status ?? null
  if (status === 'alive') return 'alive'
  const reasons = [judged?.why ?? '', extra?.why ?? '']
  if (!reasons.some(Boolean)) return 'idle'
  const entry = describe(engine, c, reasons.filter(Boolean).join('; '))
  if (extra) entry.client = extra.client
  if (asUser !== undefined) Object.assign(entry, { why: `${entry.why} (as uid ${asUser}'s engine reports it)`, asUser })
  clientOf.set(entry, client)
  listing.byId.set(key, entry)
  ;(status === 'unknown' ? listing.foreign : listing.leaked).push(entry)
  return status === 'unknown' ? 'foreign' : 'leaked'
}

/** The ids a client's clue names (the engine asked for a run label; conmon's word, checked after; the cidfile read as a trusted file). */
async function clueIds(f: ClientFinding, client: EngineClient, timeoutMs: number): Promise<string[]> {
  const clue = f.clue!
  if (clue.via === 'run-label') return listByLabel(client, `${RUN_LABEL}=${clue.runId}`, { timeoutMs })
  if (clue.via === 'conmon') return [clue.id]
  if (clue.via === 'name') return [clue.name] // the engine's container of that name, checked by untied()
  const id = readTrustedFile(clue.path, CIDFILE)?.trim() ?? ''
  if (!/^[0-9a-f]{12,64}$/.test(id)) throw new Error(`${clue.path} holds no container id`)
  return [id]
}

/**
 * Why the engine's record does not tie `c` to the client, or null when it does. A run label or
 * a cidfile of our own user's found it by the engine's own listing or our own word; a conmon's
 * `-c <id>` is only its argv (anyone can start a process so named): the engine must name that very
 * conmon as the container's, by a pid this namespace shares with the engine's.
 */
function untied(f: ClientFinding, c: InspectedContainer): string | null {
  if (f.clue?.via === 'name') {
    const name = f.clue.name.replace(/^\//, '')
    // inspect also takes an id prefix: the engine must call it by that very name.
    if (c.name !== name) return `the engine's container ${c.id.slice(0, 12)} is named ${JSON.stringify(c.name)}, not ${JSON.stringify(name)}`
    if (c.createdMs === undefined) return `the engine gives no creation time for container ${c.id.slice(0, 12)}`
    // A container that was there before the client started is not the one it created.
    if (c.createdMs < f.clue.startedMs) return `container ${c.id.slice(0, 12)} (named ${name}) was created before its client started`
    // Its own renamed (`docker rename`), another may have taken the name since: it must be what the argv runs.
    const differs = unlikeRun(f.clue.run, c)
    if (differs.length > 0) return `container ${c.id.slice(0, 12)} (named ${name}) is not what its client runs (${differs.join('; ')})`
    return null
  }
  if (f.clue?.via !== 'conmon') return null
  if (inChildPidNamespace()) return "its conmon's pid cannot be compared with the engine's record from a child PID namespace"
  return c.conmonPid === f.clue.conmonPid ? null : `the engine does not name conmon ${f.clue.conmonPid} as the monitor of container ${c.id.slice(0, 12)}`
}

/**
 * Where the engine's record of a container differs from what a run's argv asks for: the image (as
 * the argv names it; podman records the name it resolved, with its registry and `:latest`), the
 * command (when the argv gives one), `-i` (OpenStdin) and `--rm` (AutoRemove).
 */
function unlikeRun(run: NamedRun, c: InspectedContainer): string[] {
  const out: string[] = []
  if (!sameImage(c.image, run.image)) out.push(`image ${JSON.stringify(c.image)}, not ${JSON.stringify(run.image)}`)
  if (run.cmd.length > 0 && (c.cmd === null || c.cmd.length !== run.cmd.length || c.cmd.some((a, i) => a !== run.cmd[i]))) {
    out.push(`command ${JSON.stringify(c.cmd)}, not ${JSON.stringify(run.cmd)}`)
  }
  if (c.openStdin !== run.interactive) out.push(run.interactive ? 'no -i' : '-i, which its run has not')
  if (c.autoRemove !== run.autoRemove) out.push(run.autoRemove ? 'no --rm' : '--rm, which its run has not')
  return out
}

/** The engine's recorded image is the one `given` names: the same words, or (podman) those words resolved, behind a registry path and with `:latest` when untagged. */
function sameImage(recorded: string, given: string): boolean {
  if (recorded === given) return true
  const last = given.slice(given.lastIndexOf('/') + 1)
  const full = last.includes(':') || last.includes('@') ? given : `${given}:latest`
  return recorded === full || recorded.endsWith(`/${full}`)
}

const CLIENT_LOOKUPS_AT_ONCE = 4

/** `fn` over `items`, at most `limit` at once; results in the items' order. */
async function mapAtMost<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length)
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++
      out[i] = await fn(items[i]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return out
}

const clueWords = { 'run-label': 'its reapkit.run label', cidfile: 'its --cidfile', conmon: "podman's conmon in its tree", name: 'its --name' } as const
const NOTHING_STOPPED = 'nothing is stopped through the engine'
/** What a user can do about a client whose container cannot be told. */
const UNTOLD_ADVICE = (engine: ContainerEngine): string =>
  `find it with \`${engine} ps\` (the image and the time it was created, after the client started) and stop it with \`${engine} stop ID\`; give such runs a --name, or start them with reapkit's spawn or \`reapkit -- ${engine} run ...\`, and doctor can tell`

/** One client: its container found through its clue and judged, and what to say of it. `deadline`: when every client's look-up ends. */
async function linkClient(listing: Listing, f: ClientFinding, labels: readonly string[], deadline: number): Promise<OrphanedClient> {
  const base = { pid: f.pid, root: f.root, engine: f.run.engine, via: f.clue?.via ?? null }
  if (f.clue === null) return { ...base, container: null, note: `its container cannot be told (no reapkit.run label, no --cidfile, no --name, no conmon of its own in the tree): ${NOTHING_STOPPED}; ${UNTOLD_ADVICE(f.run.engine)}` }
  if (f.refused !== null || f.client === null) return { ...base, container: null, note: `${f.refused ?? 'its engine cannot be reached'}: ${NOTHING_STOPPED}` }
  const timeoutMs = Math.floor(deadline - performance.now())
  if (timeoutMs < 1) return { ...base, container: null, note: `not looked up: doctor's bound for all container clients passed before its turn: ${NOTHING_STOPPED}` }
  let found: InspectedContainer[]
  try {
    found = await inspectContainers(f.client, await clueIds(f, f.client, timeoutMs), timeoutMs)
  } catch (err) {
    return { ...base, container: null, note: `its container could not be looked up (${(err as Error).message}): ${NOTHING_STOPPED}` }
  }
  if (found.length === 0) return { ...base, container: null, note: `the engine has no container by ${clueWords[f.clue.via]}` }
  const c = found[0]!
  const why = untied(f, c)
  if (why !== null) return { ...base, container: null, note: `${why}: not proven its container, ${NOTHING_STOPPED}` }
  if (!matches(c, labels)) return { ...base, container: c.id, note: 'its container lacks the labels asked for: left out' }
  const where = judge(listing, f.run.engine, c, f.client, { why: `its client, pid ${f.pid}, lost its host (found by ${clueWords[f.clue.via]})`, client: { pid: f.pid, root: f.root } })
  const note = {
    leaked: 'listed with the leaked containers',
    foreign: 'its reapkit owner cannot be judged here: listed, not stopped',
    alive: 'its reapkit owner is alive: not ours to stop',
    idle: `it is ${c.state}: nothing to stop`,
  }[where]
  return { ...base, container: c.id, note }
}

/** Lists the leaked containers (see the file's comment). Never stops anything. */
export async function findLeakedContainers(options: FindLeakedContainersOptions = {}): Promise<ContainerReport> {
  const opts = checkOptions(options)
  const listing: Listing = { leaked: [], foreign: [], byId: new Map() }
  const scans = await Promise.all(opts.engines.map((engine) => scanEngine({ engine, bin: engine, globals: [], env: opts.env }, opts.timeoutMs)))
  for (const { scan, found } of scans) {
    for (const c of found) if (matches(c, opts.labels)) judge(listing, scan.engine, c, { engine: scan.engine, bin: scan.engine, globals: [], env: opts.env })
  }
  // Each client's engine is its own to choose (one may never answer): a few at once, and all of them
  // within twice one call's bound, so that no number of clients can hold doctor up for longer.
  const deadline = performance.now() + 2 * opts.timeoutMs
  const clients = await mapAtMost(findClients(opts.trees, opts.env), CLIENT_LOOKUPS_AT_ONCE, (f) => linkClient(listing, f, opts.labels, deadline))
  return { engines: scans.map((s) => s.scan), leaked: listing.leaked, foreign: listing.foreign, clients }
}
