/**
 * Whether a command spawn() runs is the package's own native supervisor (or its `reapkit`
 * launcher), by real path: spawn() then arms no death signal by default (spawn.ts says why).
 */
import { realpathSync } from 'node:fs'
import { launcherPath, supervisorPath } from '../ground/native'

// The real paths of the package's own supervisor and launcher, resolved once per path: spawn()
// compares every command with a '/' to them (with the package root found again each time, about
// 0.1 ms of a spawn() of 1.5 ms on the bench machine).
const realOfOwn = new Map<string, string | null>()
function realOwnPath(file: string | null): string | null {
  if (file === null) return null
  let real = realOfOwn.get(file)
  if (real === undefined) {
    try {
      real = realpathSync(file)
    } catch {
      return null // not cached: it may appear later (a build)
    }
    realOfOwn.set(file, real)
  }
  return real
}

/** Is `command` the native supervisor (by path), or the package's `reapkit` launcher? */
export function isSupervisor(command: string): boolean {
  if (!command.includes('/')) return false // a bare name: not resolved here (nor the package's paths looked up)
  const supervisor = realOwnPath(supervisorPath())
  if (supervisor === null) return false
  try {
    const real = realpathSync(command)
    return real === supervisor || real === realOwnPath(launcherPath())
  } catch {
    return false
  }
}
