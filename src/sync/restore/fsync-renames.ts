import { dirname, resolve, sep } from 'node:path'
import { eachAtOnce } from '../../util/each-at-once.js'
import { fsyncPath } from '../../util/fsync.js'

/** Directories fsynced at once at the end of a restore. */
const SYNC_CONCURRENCY = 8

/**
 * fsyncs each directory files were renamed into, and the directories above it up to its root
 * (this run may have made them), each once; `failed` is told of every file under one that fails.
 */
export async function syncRenames (renamed: ReadonlyMap<string, { readonly root: string, readonly files: readonly number[] }>, failed: (at: number, err: unknown) => void): Promise<void> {
  const synced = new Map<string, Promise<void>>()
  const syncOnce = async (dir: string): Promise<void> => {
    let pending = synced.get(dir)
    if (pending === undefined) {
      pending = fsyncPath(dir)
      synced.set(dir, pending)
    }
    await pending
  }
  await eachAtOnce([...renamed], SYNC_CONCURRENCY, async ([dir, { root, files }]) => {
    try {
      await syncOnce(dir)
      const top = resolve(root)
      for (let up = resolve(dir); up.startsWith(`${top}${sep}`);) {
        up = dirname(up)
        await syncOnce(up)
      }
    } catch (err) {
      for (const at of files) failed(at, err)
    }
  })
}

