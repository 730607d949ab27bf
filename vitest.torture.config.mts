// `npm run test:torture`: the randomized and property-based suites (test/torture/), kept out of
// `npm test`. Sized by environment variables (see test/torture/size.ts); CI runs the default size.
import { defineConfig } from 'vitest/config'

// A test's bound grows with the work: TORTURE_SCALE=20 runs the fuzz's 12,000 inputs 20 times over,
// which 10 minutes cannot hold on two loaded cores (it timed out so, without a verdict).
const scale = Math.max(1, Number(process.env.TORTURE_SCALE ?? 1) || 1)

export default defineConfig({
  test: {
    include: ['test/torture/**/*.torture.ts'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 600_000 * scale,
    hookTimeout: 120_000,
    pool: 'forks',
  },
})
