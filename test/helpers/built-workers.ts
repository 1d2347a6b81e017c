import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TestProject } from 'vitest/node'
import { BUILT_WORKERS_VARIABLE } from '../../src/util/start-worker.js'
import { builtFromCurrentInputs } from '../../scripts/build-inputs.mjs'

const root = fileURLToPath(new URL('../..', import.meta.url))

/**
 * The global setup (vitest.config.ts), before the test files and again before each rerun. The code
 * under test is TypeScript source; its worker threads start from the built bundle in dist/bin when
 * dist/ is built from the sources as they are now (`npm test` builds first). A build older than the
 * sources would run old code in the threads: then they start from source through tsx, slower but
 * current. Each test file's thread or process takes the variable from this one.
 */
export default function setup (project: TestProject): void {
  const check = (): void => {
    if (builtFromCurrentInputs(root)) process.env[BUILT_WORKERS_VARIABLE] = join(root, 'dist', 'bin')
    else delete process.env[BUILT_WORKERS_VARIABLE]
  }
  check()
  project.onTestsRerun(check)
}
