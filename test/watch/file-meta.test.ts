import { describe, expect, it } from 'vitest'
import { chmod, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { DEVICE, startWatching, type Harness } from './harness.js'

async function stopWatching (h: Harness): Promise<void> {
  await h.watcher.stop()
  h.index.close()
}

describe('what a file is, kept current by the scan', () => {
  it('a chmod while the daemon was down (no mtime moved) rewrites the row at the next start, its bytes not hashed again', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes', 'bin'), { recursive: true })
    await writeFile(join(dir, 'notes', 'bin', 'run.sh'), '#!/bin/sh\n')
    await chmod(join(dir, 'notes', 'bin', 'run.sh'), 0o644)
    const first = await startWatching(dir)
    const before = first.index.entries.get(DEVICE, 'notes', 'bin/run.sh')
    expect(before?.meta).toMatchObject({ kind: 'file', mode: 0o644 })
    expect(first.index.entries.get(DEVICE, 'notes', 'bin/')?.meta).toMatchObject({ kind: 'dir' })
    await stopWatching(first)
    await chmod(join(dir, 'notes', 'bin', 'run.sh'), 0o755)
    const again = await startWatching(dir)
    await until(async () => again.index.entries.get(DEVICE, 'notes', 'bin/run.sh')?.meta?.mode === 0o755 ? true : undefined, 10_000, 'the new mode in the row')
    const after = again.index.entries.get(DEVICE, 'notes', 'bin/run.sh')
    expect(after?.cid).toBe(before?.cid)
    expect(again.watcher.status().folders[0]?.hashed).toBe(0)
  })
})
