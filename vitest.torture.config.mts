// `npm run test:torture`: the randomized and property-based suites (test/torture/), kept out of
// `npm test`. Sized by environment variables (see test/torture/size.ts); CI runs the default size.
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/torture/**/*.torture.ts'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
})
