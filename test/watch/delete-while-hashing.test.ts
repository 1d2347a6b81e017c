import { describe, it, expect } from 'vitest'
import { openSync, closeSync, ftruncateSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { startWatching, livePaths } from './harness.js'

describe('a file deleted while it is hashed', () => {
  it('leaves no row: the hash that answers after the delete does not write the file back', async () => {
    const dir = await useTempDir()
    const h = await startWatching(dir)
    writeFileSync(join(h.root, 'keep.txt'), 'kept')
    await until(async () => { await h.watcher.current(); return livePaths(h).includes('keep.txt') ? true : undefined }, 10_000, 'the first file to be indexed', 50)
    // Sparse, so it is made at once but takes a while to hash (a read and SHA-256 of every byte).
    const big = join(h.root, 'big.bin')
    const fd = openSync(big, 'w')
    ftruncateSync(fd, 1024 * 1024 * 1024)
    closeSync(fd)
    // Deleted once it is being hashed: the hash still reads the open file to its end and answers.
    await until(() => h.watcher.status().hashing.files > 0 ? true : undefined, 10_000, 'the big file to be hashed', 5)
    rmSync(big)
    let have: string[] = []
    await until(async () => {
      await h.watcher.current()
      have = livePaths(h)
      return have.join() === 'keep.txt' ? true : undefined
    }, 10_000, 'the deleted file to have no row', 100).catch(() => undefined)
    expect(have).toEqual(['keep.txt'])
  })
})
