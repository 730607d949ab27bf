import { afterEach, expect } from 'vitest'
import { killAllGroups } from './helpers'

// Every test: kill every process group it started, pass or fail, and fail the test if a group did
// not empty (a leak is this project's worst bug).
afterEach(async () => {
  const survivors = await killAllGroups()
  expect(survivors, 'process groups that survived SIGKILL').toEqual([])
})
