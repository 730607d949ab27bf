/**
 * Whose a container client in an orphaned tree is, and how doctor reaches its engine (issue 28).
 *
 * A client of doctor's own user (every one of its uids doctor's effective uid) is reached as it
 * reached its engine: its program, global flags, environment and working directory are that user's
 * word, and that user is us. Another user's client (root's `doctor --all-users`) is never trusted so:
 * its argv[0], PATH, LD_* and working directory are theirs to choose, and running them with our
 * privileges would run their program as root. So its engine is reached by doctor's own client:
 *
 * - the program: the engine's name looked up on doctor's own PATH (never the orphan's argv[0]);
 * - run as that user (uid, primary and supplementary groups: engine-user.ts), so whatever the call
 *   reads or reaches of theirs, it does with their rights, not ours;
 * - a clean environment: a system PATH, the user's HOME, USER, LOGNAME, their XDG_RUNTIME_DIR when
 *   it is theirs, and only the engine-selecting variables of the orphan that name what they must
 *   (DOCKER_HOST / CONTAINER_HOST / CONTAINERD_ADDRESS: a unix socket that exists; DOCKER_CONTEXT,
 *   CONTAINER_CONNECTION, CONTAINERD_NAMESPACE: a plain name); never LD_*, PATH, DOCKER_CONFIG;
 * - of its global flags, only those that select the endpoint (`-H`/`--host`, `--context`, podman's
 *   `--url`/`--connection`/`--remote`, nerdctl's `--address`/`--namespace`), validated the same way;
 *   the others (`--config`, podman's `--conmon`, `--runtime`, `--root`...) are dropped;
 * - working directory `/`.
 *
 * A client whose uids differ among themselves (a set-user-ID program, a process changing users) is
 * nobody's in particular, and one in another user or mount namespace than doctor's (a container's
 * "root" is uid 0 too) names paths, programs and sockets of a world that is not ours: neither has
 * its container looked up.
 */
import { accessSync, constants as fsConstants, readFileSync, readlinkSync, statSync } from 'node:fs'
import { delimiter, isAbsolute, join } from 'node:path'
import { type ContainerEngine, type ContainerRun, globalFlags } from '../../mechanisms/container/command'
import type { EngineClient } from '../../mechanisms/container/engine'

/** Whose a client process is. */
export type ClientUser =
  | { kind: 'self' }
  | { kind: 'other'; uid: number; gid: number; groups: number[] }
  | { kind: 'mixed'; uids: number[] }
  | { kind: 'elsewhere'; namespace: string }

/** The four uids (real, effective, saved, filesystem), the real gid and the supplementary groups from /proc/<pid>/status; null when unreadable. */
function idsOf(pid: number): { uids: number[]; gid: number; groups: number[] } | null {
  let status: string
  try {
    status = readFileSync(`/proc/${pid}/status`, 'latin1')
  } catch {
    return null
  }
  const uids = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(status)
  const gids = /^Gid:\s+(\d+)/m.exec(status)
  const groups = /^Groups:([ \t\d]*)$/m.exec(status)
  if (!uids || !gids || !groups) return null
  return { uids: uids.slice(1, 5).map(Number), gid: Number(gids[1]), groups: groups[1]!.trim().split(/\s+/).filter(Boolean).map(Number) }
}

/** The first of `pid`'s user and mount namespaces that is not doctor's own, or null when both are (or, unreadable, 'unreadable'). */
function otherNamespace(pid: number): string | null {
  for (const ns of ['user', 'mnt']) {
    try {
      if (readlinkSync(`/proc/${pid}/ns/${ns}`) !== readlinkSync(`/proc/self/ns/${ns}`)) return ns
    } catch {
      return 'unreadable'
    }
  }
  return null
}

/** Whose `pid` is, from doctor's point of view; null when it cannot be read (it went away). */
export function clientUser(pid: number): ClientUser | null {
  const ids = idsOf(pid)
  if (ids === null) return null
  const namespace = otherNamespace(pid)
  if (namespace !== null) return { kind: 'elsewhere', namespace }
  const me = process.geteuid?.() ?? -1
  if (ids.uids.every((u) => u === me)) return { kind: 'self' }
  if (ids.uids.every((u) => u === ids.uids[0])) return { kind: 'other', uid: ids.uids[0]!, gid: ids.gid, groups: ids.groups }
  return { kind: 'mixed', uids: ids.uids }
}

/** The password database's entry for `uid` (name, home), or null. */
function passwdEntry(uid: number): { name: string; home: string } | null {
  let text: string
  try {
    text = readFileSync('/etc/passwd', 'utf8')
  } catch {
    return null
  }
  for (const line of text.split('\n')) {
    const f = line.split(':')
    if (f.length >= 7 && f[2] === String(uid)) return { name: f[0]!, home: f[5]! }
  }
  return null
}

/** `name` on `path` (absolute folders only), executable; null when none. */
export function onPath(name: string, path: string | undefined): string | null {
  for (const dir of (path ?? '').split(delimiter)) {
    if (!isAbsolute(dir)) continue // '' or a relative folder: the cwd's, someone else's to choose
    const file = join(dir, name)
    try {
      accessSync(file, fsConstants.X_OK)
      if (statSync(file).isFile()) return file
    } catch {
      // not here
    }
  }
  return null
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}$/
const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

/** A unix socket endpoint that exists: `unix:///path` (or, `bare` allowed, `/path`); else null. */
function socketEndpoint(value: string, bare = false): string | null {
  const path = value.startsWith('unix://') ? value.slice('unix://'.length) : bare ? value : ''
  if (!isAbsolute(path)) return null
  try {
    return statSync(path).isSocket() ? value : null
  } catch {
    return null
  }
}

type Check = (value: string) => string | null
const socket: Check = (v) => socketEndpoint(v)
const bareSocket: Check = (v) => socketEndpoint(v, true)
const name: Check = (v) => (NAME.test(v) ? v : null)

/** The orphan's environment variables that select its endpoint, and what each must be. */
const ENDPOINT_VARS: Record<string, Check> = {
  DOCKER_HOST: socket,
  DOCKER_CONTEXT: name,
  CONTAINER_HOST: socket,
  CONTAINER_CONNECTION: name,
  CONTAINERD_ADDRESS: bareSocket,
  CONTAINERD_NAMESPACE: name,
}

/** The global flags that select the endpoint, per engine (long spelling: check), and their short spellings. */
const ENDPOINT_FLAGS: Record<ContainerEngine, { long: Record<string, Check | 'boolean'>; short: Record<string, string> }> = {
  docker: { long: { '--host': socket, '--context': name }, short: { '-H': '--host', '-c': '--context' } },
  podman: { long: { '--url': socket, '--connection': name, '--remote': 'boolean' }, short: { '-c': '--connection', '-r': '--remote' } },
  nerdctl: { long: { '--address': bareSocket, '--host': bareSocket, '--namespace': name }, short: { '-a': '--address', '-n': '--namespace' } },
}

/** The run's endpoint-selecting globals, validated and written `--long=value`; a string says why it cannot be used. */
function endpointGlobals(run: ContainerRun): string[] | string {
  const flags = globalFlags(run.engine, run.globals)
  if (flags === null) return 'its global flags cannot be read'
  const table = ENDPOINT_FLAGS[run.engine]
  const out: string[] = []
  for (const { name: given, value } of flags) {
    const long = table.short[given] ?? given
    const check = table.long[long]
    if (check === undefined) continue // not an endpoint: dropped
    if (check === 'boolean') {
      if (/^(1|t|true)$/i.test(value)) out.push(long)
      continue
    }
    const ok = check(value)
    if (ok === null) return `its ${given} ${JSON.stringify(value)} is not ${check === name ? 'a plain name' : 'a unix socket that exists'}`
    out.push(`${long}=${ok}`)
  }
  return out
}

/** The clean environment for a call as `uid`, with the orphan's validated endpoint variables; a string says why not. */
function cleanEnv(uid: number, entry: { name: string; home: string } | null, orphanEnv: NodeJS.ProcessEnv): NodeJS.ProcessEnv | string {
  const env: NodeJS.ProcessEnv = { PATH: SYSTEM_PATH, HOME: entry?.home || '/', LANG: 'C' }
  if (entry) Object.assign(env, { USER: entry.name, LOGNAME: entry.name })
  const runtime = `/run/user/${uid}`
  try {
    const st = statSync(runtime)
    if (st.isDirectory() && st.uid === uid) env.XDG_RUNTIME_DIR = runtime
  } catch {
    // none: the engine picks its own
  }
  for (const [key, check] of Object.entries(ENDPOINT_VARS)) {
    const value = orphanEnv[key]
    if (value === undefined || value === '') continue
    const ok = check(value)
    if (ok === null) return `its ${key} ${JSON.stringify(value)} is not ${check === name ? 'a plain name' : 'a unix socket that exists'}`
    env[key] = ok
  }
  return env
}

/**
 * How doctor reaches the engine of another user's client (see the file's comment), or why it
 * cannot (a string: the listing says it, nothing is looked up). `doctorEnv` is doctor's own (its
 * PATH finds the engine's client and setpriv); `orphanEnv` the client's, read for its endpoint only.
 */
export function engineClientAs(user: { uid: number; gid: number; groups: readonly number[] }, run: ContainerRun, orphanEnv: NodeJS.ProcessEnv, doctorEnv: NodeJS.ProcessEnv): EngineClient | string {
  const bin = onPath(run.engine, doctorEnv.PATH)
  if (bin === null) return `doctor's own ${run.engine} client is not on its PATH`
  const setpriv = onPath('setpriv', doctorEnv.PATH)
  const setsid = onPath('setsid', doctorEnv.PATH)
  if (setpriv === null || setsid === null) return "setpriv and setsid (util-linux) are not on doctor's PATH: another user's engine is only reached as that user, in a session of its own"
  const globals = endpointGlobals(run)
  if (typeof globals === 'string') return globals
  const env = cleanEnv(user.uid, passwdEntry(user.uid), orphanEnv)
  if (typeof env === 'string') return env
  return { engine: run.engine, bin, globals, env, cwd: '/', user: { uid: user.uid, gid: user.gid, groups: user.groups, setpriv, setsid } }
}
