// Shared by the cgroup tests: whether this machine gives us a writable v2 cgroup, and a cleanup
// that removes a test's cgroups (killing what is left in them) pass or fail.
import { existsSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach } from 'vitest'
import { capabilities, openProcess } from '../lib/index'

const where = process.platform === 'linux' ? capabilities().cgroup : { available: false, reason: 'not Linux' }
/** Why the cgroup tests skip here, or null when a writable v2 cgroup is ours. */
export const noCgroup: string | null = where.available ? null : `no writable cgroup v2 here: ${where.reason}`
export const cgroupRoot: string = where.path ?? ''

function populated(path: string): boolean {
  try {
    return /^populated 1$/m.test(readFileSync(join(path, 'cgroup.events'), 'latin1'))
  } catch {
    return false
  }
}

const gone = (err: unknown): boolean => (err as NodeJS.ErrnoException).code === 'ENOENT'

/** The cgroups inside `path` ([] once it is gone: its maker may remove it, and those in it, meanwhile). */
function cgroupsIn(path: string): string[] {
  let names: string[]
  try {
    names = readdirSync(path)
  } catch (err) {
    if (gone(err)) return []
    throw err
  }
  return names
    .map((n) => join(path, n))
    .filter((p) => {
      try {
        return statSync(p).isDirectory()
      } catch (err) {
        if (gone(err)) return false
        throw err
      }
    })
}

/**
 * Kills whatever is left in each cgroup (cgroup.kill) and removes it, bounded; throws if one stays.
 * Any of them may be removed by its maker (a wrapper, a library host) while this runs: a cgroup or
 * file gone meanwhile is done, not an error.
 */
export async function removeCgroups(paths: Iterable<string>): Promise<void> {
  const stuck: string[] = []
  for (const path of paths) {
    if (!existsSync(path)) continue
    // Child cgroups first (a delegated test cgroup holds the ones its process made).
    const inner = cgroupsIn(path)
    if (inner.length > 0) await removeCgroups(inner)
    try {
      if (populated(path)) writeFileSync(join(path, 'cgroup.kill'), '1')
    } catch (err) {
      if (!gone(err)) throw err
    }
    const deadline = Date.now() + 5000
    while (populated(path) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
    try {
      rmdirSync(path)
    } catch (err) {
      if (!gone(err)) stuck.push(`${path}: ${(err as Error).message}`)
    }
  }
  if (stuck.length > 0) throw new Error(`cgroups left behind: ${stuck.join('; ')}`)
}

/**
 * A test file's cleanup, pass or fail: after each test, the processes it recorded in `strays` (its
 * escapees, by pid, pinned before the kill) are SIGKILLed, then the cgroups it recorded in `made`
 * are removed. Registers the afterEach; returns the two sets to fill.
 */
export function cleanupAfterEach(): { made: Set<string>; strays: Set<number> } {
  const made = new Set<string>()
  const strays = new Set<number>()
  afterEach(async () => {
    const exits: Array<Promise<unknown>> = []
    for (const pid of strays) {
      try {
        const h = openProcess(pid)
        h.signal('SIGKILL')
        exits.push(h.exited.finally(() => h.close()))
      } catch {
        // gone
      }
    }
    strays.clear()
    await Promise.race([Promise.all(exits), new Promise((r) => setTimeout(r, 5000))])
    await removeCgroups(made)
    made.clear()
  })
  return { made, strays }
}

/**
 * The native wrapper's `--verbose` events a run wrote to `out/events` (its JSON lines), and the
 * cgroup its `start` event names recorded in `made`, for the file's cleanup.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- events of several shapes, read as JSON.parse gives them
export function wrapperEvents(out: string, made: string[]): { events: any[]; start: any } {
  const events = readFileSync(join(out, 'events'), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
  const start = events.find((e) => e.event === 'start')
  if (typeof start?.cgroup === 'string') made.push(start.cgroup)
  return { events, start }
}
