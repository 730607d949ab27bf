/**
 * What doctor needs to know of a container, from the engine's `inspect` (docker, podman and nerdctl
 * give the same fields: Id, Name, Created, Config.Image/ImageName, Config.Cmd, Config.OpenStdin,
 * Config.Labels, State.Status, HostConfig.AutoRemove; podman also State.ConmonPid). Bounded like
 * every engine call; the ids after `--`, so that none is ever read as a flag.
 */
import { type EngineClient, engineCall, isNoSuchContainer } from '../../mechanisms/container/engine'

export interface InspectedContainer {
  id: string
  name: string
  image: string
  state: string
  autoRemove: boolean
  labels: Record<string, string>
  /** Config.Cmd: the command it runs (the run's arguments after the image, else the image's); null when the engine gave none. */
  cmd: string[] | null
  /** Config.OpenStdin: run with `-i`. */
  openStdin: boolean
  /** When the engine created it (ms since the epoch), from the engine's own record; undefined when it gave none. */
  createdMs?: number
  /** podman: the pid of the conmon that monitors it (the engine's record); undefined elsewhere. */
  conmonPid?: number
}

function read(raw: unknown): InspectedContainer | null {
  if (typeof raw !== 'object' || raw === null) return null
  const r = raw as {
    Id?: unknown
    Name?: unknown
    Created?: unknown
    ImageName?: unknown
    Config?: { Image?: unknown; Cmd?: unknown; OpenStdin?: unknown; Labels?: unknown }
    State?: { Status?: unknown; ConmonPid?: unknown }
    HostConfig?: { AutoRemove?: unknown }
  }
  if (typeof r.Id !== 'string') return null
  const str = (v: unknown): string => (typeof v === 'string' ? v : '')
  const labels: Record<string, string> = Object.create(null)
  if (typeof r.Config?.Labels === 'object' && r.Config.Labels !== null) {
    for (const [k, v] of Object.entries(r.Config.Labels)) if (typeof v === 'string') labels[k] = v
  }
  const created = Date.parse(str(r.Created))
  const conmon = r.State?.ConmonPid
  const cmd = r.Config?.Cmd
  return {
    id: r.Id,
    name: str(r.Name).replace(/^\//, ''), // docker writes "/name"
    image: str(r.Config?.Image) || str(r.ImageName),
    state: str(r.State?.Status),
    autoRemove: r.HostConfig?.AutoRemove === true,
    labels,
    cmd: Array.isArray(cmd) && cmd.every((a) => typeof a === 'string') ? (cmd as string[]) : null,
    openStdin: r.Config?.OpenStdin === true,
    ...(Number.isFinite(created) ? { createdMs: created } : {}),
    ...(typeof conmon === 'number' && Number.isSafeInteger(conmon) && conmon > 0 ? { conmonPid: conmon } : {}),
  }
}

async function inspect(client: EngineClient, ids: readonly string[], timeoutMs: number): Promise<InspectedContainer[]> {
  const out = await engineCall(client, ['inspect', '--type', 'container', '--', ...ids], timeoutMs)
  const parsed: unknown = JSON.parse(out)
  return (Array.isArray(parsed) ? parsed : []).map(read).filter((c): c is InspectedContainer => c !== null)
}

/**
 * The containers `ids` name; one removed meanwhile is left out. Asked all at once; when that fails
 * (one of them went away: the engine then fails the whole call), one by one.
 */
export async function inspectContainers(client: EngineClient, ids: readonly string[], timeoutMs: number): Promise<InspectedContainer[]> {
  if (ids.length === 0) return []
  try {
    return await inspect(client, ids, timeoutMs)
  } catch (err) {
    if (ids.length === 1 && isNoSuchContainer(err)) return []
    if (ids.length === 1 || !isNoSuchContainer(err)) throw err
  }
  const each = await Promise.all(ids.map((id) => inspect(client, [id], timeoutMs).catch((err: unknown) => (isNoSuchContainer(err) ? [] : Promise.reject(err)))))
  return each.flat()
}
