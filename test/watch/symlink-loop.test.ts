import { describe, it, expect } from 'vitest'
import { mkdir, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { startWatching, livePaths, type Harness } from './harness.js'

async function indexed (h: Harness, count: number): Promise<string[]> {
  return await until(async () => {
    await h.watcher.current()
    const paths = livePaths(h)
    return paths.length === count ? paths : undefined
  }, 10_000, `${count} rows`).catch((err: Error) => { throw new Error(`${err.message}; there are ${livePaths(h).length}`) })
}

describe('follow_symlinks = true with a link back up the tree', () => {
  it('indexes each file once: a loop is not followed, at start or live', async () => {
    const dir = await useTempDir()
    const root = join(dir, 'notes')
    const expected: string[] = []
    for (const sub of ['a', 'a/deep', 'b']) {
      await mkdir(join(root, sub), { recursive: true })
      for (let i = 0; i < (sub === 'b' ? 4 : 5); i++) {
        await writeFile(join(root, sub, `f${i}.md`), `${sub} ${i}`)
        expected.push(`${sub}/f${i}.md`)
      }
    }
    await symlink(root, join(root, 'a', 'deep', 'to-root'))
    await symlink(join(root, 'a'), join(root, 'a', 'deep', 'to-a'))
    const h = await startWatching(dir, { followSymlinks: true })
    expect(await indexed(h, 14)).toEqual(expected.sort())

    // Made while watching: a new directory with a loop inside, and a file that shows the watch is live.
    await mkdir(join(root, 'c'))
    await symlink(join(root, 'c'), join(root, 'c', 'self'))
    await symlink(root, join(root, 'b', 'up'))
    await writeFile(join(root, 'c', 'new.md'), 'new')
    expect(await indexed(h, 15)).toContain('c/new.md')
    await until(async () => { await h.watcher.current(); return true }, 5_000, 'the watcher to settle')
    expect(livePaths(h)).toHaveLength(15)
  })
})
