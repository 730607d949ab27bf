import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    // Real processes and signals: generous bounds, never tight timings.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
})
