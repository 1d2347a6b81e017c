import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { promisify } from 'node:util'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { onTestFinished } from 'vitest'

/**
 * A fresh directory under the OS temp dir, removed when the current test finishes (passed, failed
 * or timed out). Call it inside a test: an `afterEach` registered there never runs for that test.
 */
export async function useTempDir (prefix = 'cidsync-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  onTestFinished(async () => {
    try {
      await rm(dir, { recursive: true, force: true, maxRetries: 3 })
    } catch {
      // A tree deeper than PATH_MAX (ENAMETOOLONG): rm(1) walks it one level at a time.
      await promisify(execFile)('rm', ['-rf', dir], { timeout: 60_000 })
    }
  })
  return dir
}
