import { join } from 'node:path'
import { afterEach, beforeEach, expect } from 'vitest'
import { killAllGroups } from './helpers'

// Our own leak guard (reapkit/testing, the built package, as users get it): every test runs as a
// child subreaper (Linux) and fails if any process it started, escapees included, outlives it.
// Registered first, so that it runs last, after the group cleanup below ('stack' hook order).
if (process.platform === 'linux') {
  const { installLeakGuard } = require(join(__dirname, '..', 'dist', 'cjs', 'testing.js'))
  installLeakGuard({ beforeEach, afterEach })
}

// Every test: kill every process group it started, pass or fail, and fail the test if a group did
// not empty (a leak is this project's worst bug).
afterEach(async () => {
  const survivors = await killAllGroups()
  expect(survivors, 'process groups that survived SIGKILL').toEqual([])
})
