import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { onTestFinished } from 'vitest'

/**
 * A fresh directory under the OS temp dir, removed when the current test finishes (passed, failed
 * or timed out). Call it inside a test: an `afterEach` registered there never runs for that test.
 */
export async function useTempDir (prefix = 'cidsync-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  onTestFinished(async () => { await rm(dir, { recursive: true, force: true, maxRetries: 3 }) })
  return dir
}
