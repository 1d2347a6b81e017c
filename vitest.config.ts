import { configDefaults, defineConfig } from 'vitest/config'
import { SLOW_FILES } from './test/slow-files.js'

/** Every test file: the fast suite is these less the slow ones. */
export const TEST_FILES = 'test/**/*.test.ts'

export default defineConfig({
  test: {
    // Generous: a test must pass on a busy machine (the suite beside two CPU hogs); the waits inside
    // are scaled too (test/helpers/wait.ts WAIT_SCALE).
    testTimeout: 240_000,
    hookTimeout: 240_000,
    // Tests spawn daemons and hash on worker threads; two cores do not gain from more workers.
    maxWorkers: 2,
    teardownTimeout: 10_000,
    // Worker threads start from the built bundle while it is current (see the file).
    globalSetup: ['test/helpers/built-workers.ts'],
    // Two suites: `npm test` runs the fast one, `npm run test:slow` the other. A file named on the
    // command line runs in whichever suite holds it. The fast suite runs each file in a fresh worker
    // thread, which starts for less than a process: its files are many and short. The slow suite
    // keeps a process a file, for tests that count the whole process's descriptors or memory.
    projects: [
      { extends: true, test: { name: 'fast', pool: 'threads', include: [TEST_FILES], exclude: [...configDefaults.exclude, ...SLOW_FILES] } },
      { extends: true, test: { name: 'slow', include: [...SLOW_FILES] } }
    ]
  }
})
