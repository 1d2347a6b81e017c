import { describe, expect, it } from 'vitest'
import { mkdir, realpath } from 'node:fs/promises'
import { join } from 'node:path'
import { syncRenames } from '../../../src/sync/restore/fsync-renames.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { canNameDescriptors, recordHandleSyncs } from '../../helpers/sync-probe.js'

describe('the renames of a restore made durable', () => {
  it.runIf(canNameDescriptors())('fsync each directory written into and those above it up to the root, once each; a directory that fails fails its files alone', async () => {
    const root = await realpath(await useTempDir())
    await mkdir(join(root, 'a', 'b'), { recursive: true })
    await mkdir(join(root, 'a', 'c'))
    const synced = await recordHandleSyncs()
    const failed: Array<[number, string]> = []
    await syncRenames(new Map([
      [join(root, 'a', 'b'), { root, files: [0, 1] }],
      [join(root, 'a', 'c'), { root, files: [2] }],
      // Gone since its files were renamed into it: their renames cannot be made durable.
      [join(root, 'gone'), { root, files: [3, 4] }]
    ]), (at, err) => failed.push([at, (err as NodeJS.ErrnoException).code ?? '']))
    expect([...synced].sort()).toEqual([root, join(root, 'a'), join(root, 'a', 'b'), join(root, 'a', 'c')].sort())
    expect(failed.sort()).toEqual([[3, 'ENOENT'], [4, 'ENOENT']])
  })
})
