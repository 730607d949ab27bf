/**
 * The container clients among the trees doctor lists: a `docker run`/`podman run` client whose
 * host is gone (findOrphans' dead-pipe criterion) leaves its container to the daemon, so doctor
 * says which container it is, where that can be told exactly, in this order:
 *
 *   1. the run carries a `reapkit.run=<id>` label among its run flags (the last one: the engine
 *      keeps the last value, and reapkit puts its own at the end of the run flags; older ones, and
 *      the wrapper, put it right after `run`): the engine lists the container by that label;
 *   2. the user's own `--cidfile`: the file the client wrote the id into;
 *   3. podman's conmon in the same tree, naming the container (`-c <id>`): below the client, or
 *      beside it under a subreaper when the tree holds no other podman client;
 *   4. the run's `--name` (the plain `docker run -i --rm --name X IMAGE` of a host without
 *      reapkit, the common leak): while its client lives the engine holds that name for the
 *      client's container alone (a second run of the name fails), unless it was renamed (`docker
 *      rename`), after which another container may take the name. So the engine's container of
 *      that name is taken as the client's only if the engine created it after the client started
 *      and its record is what the argv runs: the image, the command (when given), -i and --rm
 *      (doctor/containers.ts checks them on the engine's record: a name in an argv is only a
 *      word). A rename followed by the very same run under the old name still passes: that is
 *      as far as a name can be told. A name neither engine accepts is never looked up.
 *
 * Anything else cannot be told (the client is listed, saying so; nothing is stopped blind). Linux
 * only: the client's argv, environment and working directory are read from /proc.
 *
 * Whose word each clue is (issue 28): a client of doctor's own user is reached as it reached its
 * engine, and its --cidfile is read (by the trusted-file rules: no link, no FIFO, ours, bounded).
 * Another user's is reached by doctor's own client, run as that user (./client-user.ts); its
 * --cidfile is never opened (a file they wrote proves nothing), and what the other clues name is
 * taken only where the engine's own record ties it to the client (doctor/containers.ts).
 */
import { readFileSync, readlinkSync } from 'node:fs'
import { isAbsolute, join } from 'node:path'
import { type ContainerRun, engineOf, parseContainerRun, RUN_LABEL, runFlags } from '../../mechanisms/container/command'
import { BOOL_TRUE } from '../../mechanisms/container/grammar'
import type { EngineClient } from '../../mechanisms/container/engine'
import { processStartTime } from '../../mechanisms/container/owner'
import type { OrphanProcess, OrphanTree } from './doctor'
import { type ClientUser, clientUser, engineClientAs } from './client-user'

/** How a client's container was told, and what names it. */
export type ClientClue =
  | { via: 'run-label'; runId: string }
  | { via: 'cidfile'; path: string }
  | { via: 'conmon'; conmonPid: number; id: string }
  /**
   * `--name`: the engine's container of that name, if it was created after `startedMs` (the
   * client's start, ms since the epoch, never later than the true start) and the engine's record
   * of it is what the argv runs: its image, its command (when the argv gives one), `-i` and `--rm`.
   */
  | { via: 'name'; name: string; startedMs: number; run: NamedRun }

/** What a `--name` run's argv says its container is, to hold against the engine's record. */
export interface NamedRun {
  /** The image as the argv gives it. */
  image: string
  /** The arguments after the image (empty: the image's own command). */
  cmd: string[]
  /** `-i` given (and true): the engine records OpenStdin. */
  interactive: boolean
  /** `--rm` given (and true): the engine records AutoRemove. */
  autoRemove: boolean
}

/** A name both engines accept for a container (their own pattern): anything else is refused, never passed on. */
export const CONTAINER_NAME = /^\/?[a-zA-Z0-9][a-zA-Z0-9_.-]+$/

/** One container client found in an orphaned tree. */
export interface ClientFinding {
  pid: number
  root: number
  run: ContainerRun
  /** How doctor reaches its engine: as the client did (doctor's own user's), or doctor's own client as its user; null: it cannot. */
  client: EngineClient | null
  /** Whose it is: doctor's own user's, another user's, or mixed. */
  user: ClientUser
  /** How its container can be told; null when it cannot. */
  clue: ClientClue | null
  /** Why its clue is not followed (another user's --cidfile, mixed uids, its engine not reachable as its user); null: followed. */
  refused: string | null
}

/** /proc start times are in USER_HZ clock ticks, 100 on every Linux architecture's ABI: 10 ms each. */
const TICK_MS = 10

const procFile = (pid: number, name: string): string | null => {
  try {
    return readFileSync(`/proc/${pid}/${name}`, 'latin1')
  } catch {
    return null
  }
}

/** argv from /proc/<pid>/cmdline (NUL-separated), or null when unreadable. */
export function argvOf(pid: number): string[] | null {
  const raw = procFile(pid, 'cmdline')
  if (raw === null || raw === '') return null
  return raw.replace(/\0$/, '').split('\0')
}

/** The client's environment (DOCKER_HOST, CONTAINER_HOST... decide which daemon it spoke to). */
function envOf(pid: number): NodeJS.ProcessEnv | null {
  const raw = procFile(pid, 'environ')
  if (raw === null) return null
  const env: NodeJS.ProcessEnv = {}
  for (const entry of raw.split('\0')) {
    const eq = entry.indexOf('=')
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1)
  }
  return env
}

function cwdOf(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/cwd`)
  } catch {
    return undefined
  }
}

/** The value of the last `reapkit.run` label among the run's flags (the one the engine keeps), or null. */
function reapkitRunId(run: ContainerRun): string | null {
  let id: string | null = null
  for (const label of run.labels) {
    const eq = label.indexOf('=')
    if ((eq < 0 ? label : label.slice(0, eq)) === RUN_LABEL) id = eq < 0 ? '' : label.slice(eq + 1)
  }
  return id === '' ? null : id
}

/**
 * The value of the run flag `long` (the last one given: pflag keeps the last), e.g. `--cidfile` or
 * `--name`. The flag table is command.ts's; its parser is asked two things here, both through
 * parseContainerRun on made-up argvs: where the image is (the shortest prefix it accepts as a run),
 * and whether a flag takes the next argument (`run FLAG X` is a run only when X is the image, i.e.
 * FLAG took no value).
 */
function runFlagValue(bin: string, args: readonly string[], runAt: number, long: string): string | null {
  let image = -1
  for (let k = runAt + 2; k <= args.length && image < 0; k++) if (parseContainerRun(bin, args.slice(0, k)) !== null) image = k - 1
  if (image < 0) return null
  let value: string | null = null
  for (let i = runAt + 1; i < image; ) {
    const arg = args[i]!
    if (arg === '--') break
    if (arg.startsWith(`${long}=`)) value = arg.slice(long.length + 1) || null
    else if (arg === long) value = args[i + 1] ?? null
    i += parseContainerRun(bin, ['run', arg, 'X']) !== null ? 1 : 2
  }
  return value
}

/**
 * The client's start in ms since the epoch, never later than its true start and at most ~20 ms
 * before it: its start is clock ticks since boot, /proc/uptime is the same boot clock now, and the
 * difference is taken from the wall clock once (read first, so a late uptime read only moves the
 * result earlier; one tick off for each figure's rounding down). /proc/stat's btime, whole seconds
 * rounded down, let a container created up to a second before the client pass as created after it.
 */
function startedMsOf(ticks: string | undefined): number | null {
  if (ticks === undefined || !/^[0-9]+$/.test(ticks)) return null
  const wall = Date.now()
  let uptime: number
  try {
    uptime = Number(readFileSync('/proc/uptime', 'latin1').split(' ')[0])
  } catch {
    return null // no /proc
  }
  if (!Number.isFinite(uptime)) return null
  return wall - (uptime * 1000 + TICK_MS) + Number(ticks) * TICK_MS
}

/** What a run's argv says its container is (image, command, -i, --rm), or null where its flags cannot be read. */
function namedRunOf(args: readonly string[], run: ContainerRun): NamedRun | null {
  const flags = runFlags(args, run)
  if (flags === null) return null
  let interactive = false
  for (const f of flags) if (f.name === '-i' || f.name === '--interactive') interactive = BOOL_TRUE.includes(f.value)
  const imageAt = args[run.flagsEnd] === '--' ? run.flagsEnd + 1 : run.flagsEnd
  const image = args[imageAt]
  return image === undefined ? null : { image, cmd: args.slice(imageAt + 1), interactive, autoRemove: run.autoRemove }
}

/** conmon's `-c`/`--cid` value (the container id it monitors). */
function conmonId(argv: readonly string[]): string | null {
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '-c' || a === '--cid') return argv[i + 1] ?? null
    if (a.startsWith('--cid=')) return a.slice(6)
  }
  return null
}

const isConmon = (argv: readonly string[] | null): boolean => argv !== null && /(^|\/)conmon$/.test(argv[0]!)

/** A conmon of `tree` that is `client`'s: below it, or beside it when it is the tree's only podman client. */
function conmonOf(tree: OrphanTree, client: OrphanProcess, podmanClients: number, argvs: Map<number, string[] | null>): ClientClue | null {
  const byPid = new Map(tree.processes.map((p) => [p.pid, p]))
  const below = (p: OrphanProcess): boolean => {
    for (let up = byPid.get(p.ppid); up; up = up.ppid === up.pid ? undefined : byPid.get(up.ppid)) if (up.pid === client.pid) return true
    return false
  }
  const candidates = tree.processes.filter((p) => isConmon(argvs.get(p.pid) ?? null))
  const mine = candidates.filter(below)
  const beside = podmanClients === 1 ? candidates.filter((p) => p.ppid === client.ppid) : []
  const found = mine.length === 1 ? mine : mine.length === 0 && beside.length === 1 ? beside : []
  if (found.length !== 1) return null
  const id = conmonId(argvs.get(found[0]!.pid)!)
  return id ? { via: 'conmon', conmonPid: found[0]!.pid, id } : null
}

/** What tells a client's container: its run label, its --cidfile (under its cwd), or podman's conmon. */
function clueOf(tree: OrphanTree, pid: number, run: ContainerRun, argvs: Map<number, string[] | null>, podmanClients: number, cwd: string | undefined): ClientClue | null {
  const runId = reapkitRunId(run)
  if (runId !== null) return { via: 'run-label', runId }
  const args = argvs.get(pid)!.slice(1)
  const cidfile = runFlagValue(run.bin, args, run.runAt, '--cidfile')
  if (cidfile !== null) return { via: 'cidfile', path: isAbsolute(cidfile) || !cwd ? cidfile : join(cwd, cidfile) }
  const conmon = run.engine === 'podman' ? conmonOf(tree, tree.processes.find((p) => p.pid === pid)!, podmanClients, argvs) : null
  if (conmon !== null) return conmon
  const name = runFlagValue(run.bin, args, run.runAt, '--name')
  const startedMs = startedMsOf(tree.processes.find((p) => p.pid === pid)?.start)
  const named = namedRunOf(args, run)
  return name !== null && startedMs !== null && named !== null ? { via: 'name', name, startedMs, run: named } : null
}

/** How doctor reaches a client's engine (see the file's comment), or why it cannot. */
function reachOf(user: ClientUser, pid: number, run: ContainerRun, cwd: string | undefined, doctorEnv: NodeJS.ProcessEnv): EngineClient | string {
  const env = envOf(pid)
  if (user.kind === 'self') return { engine: run.engine, bin: run.bin, globals: run.globals, env: env ?? doctorEnv, ...(cwd ? { cwd } : {}) }
  if (user.kind === 'mixed') return `its uids differ (${user.uids.join(', ')}): it is no one user's, so nothing it names is looked up`
  if (user.kind === 'elsewhere') return `it runs in another ${user.namespace === 'unreadable' ? 'namespace (unreadable)' : `${user.namespace} namespace`} than doctor (a container?): its program, paths and environment are not this system's, so nothing it names is looked up`
  const client = engineClientAs(user, run, env ?? {}, doctorEnv)
  return typeof client === 'string' ? `it is uid ${user.uid}'s, and its engine cannot be reached as that user: ${client}` : client
}

/** One client: whose it is, how its engine is reached, what tells its container; null when it went away. */
function clientFinding(tree: OrphanTree, pid: number, run: ContainerRun, argvs: Map<number, string[] | null>, podmanClients: number, doctorEnv: NodeJS.ProcessEnv): ClientFinding | null {
  const started = tree.processes.find((p) => p.pid === pid)?.start
  const user = clientUser(pid)
  if (user === null) return null
  const cwd = user.kind === 'self' ? cwdOf(pid) : undefined // another user's cwd is not ours to resolve paths in
  const base = { pid, root: tree.root, run, user, clue: clueOf(tree, pid, run, argvs, podmanClients, cwd) }
  const client = reachOf(user, pid, run, cwd, doctorEnv)
  // Its argv (the tree's), uids, environment and cwd were read one after the other: all of one
  // process only if the pid still names the process the tree saw start.
  if (started === undefined || processStartTime(pid) !== started) return null
  if (typeof client === 'string') return { ...base, client: null, refused: client }
  const refused =
    user.kind === 'other' && base.clue?.via === 'cidfile'
      ? `its --cidfile is uid ${user.uid}'s file, no proof of which container is its: not opened; run \`reapkit doctor\` as that user to stop it`
      : base.clue?.via === 'name' && !CONTAINER_NAME.test(base.clue.name)
        ? `its --name ${JSON.stringify(base.clue.name)} is no container name an engine accepts: not looked up`
        : null
  return { ...base, client, refused }
}

/** The container clients in the trees, each with what tells its container (Linux; elsewhere none). */
export function findClients(trees: readonly OrphanTree[], fallbackEnv: NodeJS.ProcessEnv): ClientFinding[] {
  if (process.platform !== 'linux') return []
  const out: ClientFinding[] = []
  for (const tree of trees) {
    const argvs = new Map(tree.processes.map((p) => [p.pid, argvOf(p.pid)]))
    const runs = new Map<number, ContainerRun>()
    for (const p of tree.processes) {
      const argv = argvs.get(p.pid)
      if (!argv || engineOf(argv[0]!) === null) continue
      const run = parseContainerRun(argv[0]!, argv.slice(1))
      if (run) runs.set(p.pid, run)
    }
    const podmanClients = [...runs.values()].filter((r) => r.engine === 'podman').length
    for (const [pid, run] of runs) {
      const finding = clientFinding(tree, pid, run, argvs, podmanClients, fallbackEnv)
      if (finding) out.push(finding)
    }
  }
  return out
}
