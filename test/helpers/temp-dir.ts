import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach } from 'vitest'

/** A fresh directory under the OS temp dir, removed after the current test. */
export async function useTempDir (prefix = 'cidsync-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  afterEach(async () => { await rm(dir, { recursive: true, force: true, maxRetries: 3 }) })
  return dir
}
