// The cgroup tests' own cleanup (test/cgroup-lib.ts removeCgroups) while the cgroups' maker removes
// them too, as a wrapper or a library host does once its command is gone: a cgroup that vanishes
// between the cleanup's listing and its look at it is done, not an error (before, its statSync or
// readdirSync threw ENOENT and failed whichever test's afterEach ran it). Real cgroups, a real
// racing process: a shell that removes the same inner cgroups while the cleanup walks them.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { cgroupRoot, noCgroup, removeCgroups } from './cgroup-lib'
import { exitOf } from './helpers'

describe.skipIf(noCgroup !== null)('removeCgroups', () => {
  it('a cgroup removed by someone else while it walks them is not an error (1,500 inner cgroups removed meanwhile by a shell, five rounds)', async () => {
    for (let round = 0; round < 5; round++) {
      const outer = join(cgroupRoot, `cgroup-lib-race-${process.pid}-${round}`)
      mkdirSync(outer)
      try {
        for (let i = 0; i < 1500; i++) mkdirSync(join(outer, `c${i}`))
        // The other remover: rmdir of each inner cgroup, from the last one down, while we walk them.
        const other = spawn('sh', ['-c', 'i=1499; while [ $i -ge 0 ]; do rmdir "$1/c$i" 2>/dev/null; i=$((i - 1)); done', '_', outer], { stdio: 'ignore' })
        try {
          await new Promise((r) => setTimeout(r, 20))
          await removeCgroups([outer])
        } finally {
          other.kill('SIGKILL')
          await exitOf(other)
        }
        expect(existsSync(outer), `round ${round}`).toBe(false)
      } finally {
        await removeCgroups([outer]) // (a failed round's leftovers, nothing racing now)
      }
    }
  })
})
