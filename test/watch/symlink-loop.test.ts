import { describe, it, expect } from 'vitest'
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises'
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

describe('follow_symlinks = false', () => {
  const links = (h: Harness): string[] => (h.watcher.status().folders[0]?.skippedFiles ?? [])
    .filter(f => f.reason === 'ERR_SYMLINK_NOT_FOLLOWED').map(f => f.path).sort()

  it('lists each link it leaves alone as skipped, found at start, live, and when a file becomes one; a removed link leaves the list', async () => {
    const dir = await useTempDir()
    const root = join(dir, 'notes')
    await mkdir(join(root, 'a'), { recursive: true })
    await writeFile(join(root, 'a', 'f.md'), 'f')
    await writeFile(join(root, 'target.md'), 'target')
    await symlink(join(root, 'target.md'), join(root, 'at-start.md'))
    await symlink(join(root, 'a'), join(root, 'dir-link'))
    const h = await startWatching(dir)
    expect(livePaths(h)).toEqual(['a/f.md', 'target.md'])
    await until(async () => links(h).length === 2 ? true : undefined, 10_000, 'the links found at start')
    expect(links(h)).toEqual(['at-start.md', 'dir-link'])
    expect(h.watcher.status().folders[0]?.skipped).toBe(2)
    // Seen again by the watch and every walk, never counted as a retry.
    expect(h.watcher.status().folders[0]?.skippedFiles.find(f => f.path === 'at-start.md')).toMatchObject({ kind: 'file', retries: 0, nextRetryAt: null })

    // Made while watching, in a new directory too; and a file replaced by a link loses its row.
    await mkdir(join(root, 'b'))
    await symlink(join(root, 'target.md'), join(root, 'b', 'live.md'))
    await rm(join(root, 'a', 'f.md'))
    await symlink(join(root, 'target.md'), join(root, 'a', 'f.md'))
    await until(async () => links(h).length === 4 ? true : undefined, 10_000, 'the links made while watching').catch((err: Error) => { throw new Error(`${err.message}: ${links(h).join(', ')}`) })
    expect(links(h)).toEqual(['a/f.md', 'at-start.md', 'b/live.md', 'dir-link'])
    await until(async () => livePaths(h).length === 1 ? true : undefined, 10_000, 'the replaced file\'s row to go')

    // Removed: the next look at the folder (the drift check) forgets it.
    await rm(join(root, 'at-start.md'))
    await h.watcher.checkDrift()
    expect(links(h)).toEqual(['a/f.md', 'b/live.md', 'dir-link'])
  })
})
