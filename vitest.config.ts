import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Generous: a test must pass on a busy machine (the suite beside two CPU hogs); the waits inside
    // are scaled too (test/helpers/wait.ts WAIT_SCALE).
    testTimeout: 240_000,
    hookTimeout: 240_000,
    // Tests spawn daemons and hash on worker threads; two cores do not gain from more forks.
    maxWorkers: 2,
    teardownTimeout: 10_000
  }
})
