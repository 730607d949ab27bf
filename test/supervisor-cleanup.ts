import { rmSync } from 'node:fs'
import { afterEach } from 'vitest'
import type { Supervisor } from '../lib/index'

/**
 * The supervisors and scratch folders a test file makes: each test pushes its own, and they are
 * shut down (every child stopped) and removed after it, pass or fail.
 */
export function cleanupAfterEach(): { supervisors: Supervisor[]; dirs: string[] } {
  const made = { supervisors: [] as Supervisor[], dirs: [] as string[] }
  afterEach(async () => {
    for (const sup of made.supervisors.splice(0)) {
      await sup.shutdownAll()
      sup.dispose()
    }
    for (const dir of made.dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })
  return made
}
