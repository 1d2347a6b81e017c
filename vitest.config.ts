import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests spawn daemons and hash on worker threads; two cores do not gain from more forks.
    maxWorkers: 2,
    teardownTimeout: 10_000
  }
})
