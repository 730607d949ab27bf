// The reach suite (test/reach/): the native-facing subset run under another Node in another root
// (Debian 11 x64; arm64 under qemu-user), from scripts/reach/verify-*.sh, which stage the root and
// set REAPKIT_REACH_*. Kept out of `npm test`.
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/reach/**/*.reach.ts'],
    setupFiles: ['test/setup.ts'],
    // Emulated processes are slow and the machine is shared: generous bounds, one file at a time.
    testTimeout: 240_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: false,
  },
})
