/**
 * The state file as read back (supervisor/state.ts writes it): its records, its owner, the
 * container runs and cgroups it keeps after their children, and its restarts. A torn or
 * unreadable file is reported as corrupt, never thrown; a file that is not this user's alone is
 * (ERR_REAPKIT_STATE_FILE_UNSAFE).
 */
import { ReapkitError } from '../../ground/errors'
import { RestartTimes } from './state-restarts'
import { parseStateContainer, type StateContainer } from './state-containers'
import { parseRecordedCgroup, type RecordedCgroup } from './state-cgroups'
import { readTrustedStateFile } from '../state-file-trust'

/** One line of the state file. */
export interface StateRecord {
  pid: number
  /** Start time as the process table gives it (clock ticks since boot on Linux). */
  start: string
  pgid: number | null
  requestId: string | number | null
  command: string
  args: string[]
  /** The token of the incarnation that spawned it, found in its environment; null: adopted, unprovable. */
  token: string | null
  /** Its container run, when it is a container client. */
  container?: StateContainer
  /** Its cgroup, when it was spawned into one of its own (spawn({ cgroup: true })). */
  cgroup?: RecordedCgroup
}

/** The supervisor that writes a file: its pid and start time (so a recycled pid is not taken for it). */
export interface Owner {
  pid: number
  start: string
}

const START_RE = /^[\w :.-]+$/

const TOKEN_RE = /^[0-9a-f]{32}$/

export interface FileContents {
  records: StateRecord[]
  /** Container runs whose clients had exited before their containers were confirmed gone. */
  containers: StateContainer[]
  /** Cgroups whose child had exited before they were removed (an escapee held them). */
  cgroups: RecordedCgroup[]
  owner: Owner | null
  corrupt: boolean
  restarts: RestartTimes
}

export function readRecords(file: string): FileContents {
  const none = (corrupt: boolean): FileContents => ({ records: [], containers: [], cgroups: [], owner: null, corrupt, restarts: new RestartTimes() })
  let text: string | null
  try {
    text = readTrustedStateFile(file)
  } catch (err) {
    if ((err as ReapkitError).code === 'ERR_REAPKIT_STATE_FILE_UNSAFE') throw err
    return none(true)
  }
  if (text === null) return none(false)
  try {
    const data = JSON.parse(text) as { version?: unknown; processes?: unknown; owner?: Partial<Owner>; containers?: unknown; cgroups?: unknown; restarts?: unknown }
    if (data.version !== 1 || !Array.isArray(data.processes)) return none(true)
    const ok = (r: Partial<StateRecord>): r is StateRecord =>
      Number.isSafeInteger(r.pid) && (r.pid as number) > 0 && typeof r.start === 'string' && START_RE.test(r.start)
    const o = data.owner
    const owner = o && Number.isSafeInteger(o.pid) && typeof o.start === 'string' && START_RE.test(o.start) ? (o as Owner) : null
    const records = (data.processes as Partial<StateRecord>[]).filter(ok).map(({ container, cgroup, ...r }) => {
      const run = container === undefined ? null : parseStateContainer(container)
      const cg = cgroup === undefined ? null : parseRecordedCgroup(cgroup)
      return { ...r, token: typeof r.token === 'string' && TOKEN_RE.test(r.token) ? r.token : null, ...(run ? { container: run } : {}), ...(cg ? { cgroup: cg } : {}) }
    })
    const containers = (Array.isArray(data.containers) ? data.containers : []).map(parseStateContainer).filter((c) => c !== null)
    const cgroups = (Array.isArray(data.cgroups) ? data.cgroups : []).map(parseRecordedCgroup).filter((c) => c !== null)
    return { records, containers, cgroups, owner, corrupt: false, restarts: RestartTimes.read(data.restarts) }
  } catch {
    return none(true)
  }
}
