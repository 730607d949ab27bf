// `npm run test:win32`: the Windows suite (test/win32/), run from Linux with node.exe under Wine.
// Kept out of `npm test`; scripts/win32/{setup,build,stage}.sh prepare what it needs.
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/win32/**/*.win32.ts'],
    // Wine starts slowly and the machine is shared: generous bounds, one file at a time.
    testTimeout: 240_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: false,
  },
})
