import { describe, it, expect } from 'vitest'
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { execFileSync } from 'node:child_process'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { startWatching, livePaths, DEVICE, type Harness } from './harness.js'

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
  const links = (h: Harness): Record<string, string | null> => Object.fromEntries(h.index.entries.list({ deviceId: DEVICE })
    .filter(e => e.meta?.kind === 'symlink').map(e => [e.path, e.meta?.target ?? null]))

  it('indexes each link as a link (its target, never its content), found at start, live, and when a file becomes one; a removed link is deleted', async () => {
    const dir = await useTempDir()
    const root = join(dir, 'notes')
    await mkdir(join(root, 'a'), { recursive: true })
    await writeFile(join(root, 'a', 'f.md'), 'f')
    await writeFile(join(root, 'target.md'), 'target')
    await symlink(join(root, 'target.md'), join(root, 'at-start.md'))
    await symlink('a', join(root, 'dir-link'))
    const h = await startWatching(dir)
    expect(links(h)).toEqual({ 'at-start.md': join(root, 'target.md'), 'dir-link': 'a' })
    expect(h.watcher.status().folders[0]?.skipped).toBe(0)

    // Made while watching, in a new directory too; and a file replaced by a link becomes a link.
    await mkdir(join(root, 'b'))
    await symlink('../target.md', join(root, 'b', 'live.md'))
    await rm(join(root, 'a', 'f.md'))
    await symlink('../nowhere', join(root, 'a', 'f.md'))
    await until(async () => Object.keys(links(h)).length === 4 ? true : undefined, 10_000, 'the links made while watching').catch((err: Error) => { throw new Error(`${err.message}: ${JSON.stringify(links(h))}`) })
    expect(links(h)).toEqual({ 'a/f.md': '../nowhere', 'at-start.md': join(root, 'target.md'), 'b/live.md': '../target.md', 'dir-link': 'a' })
    expect(h.index.entries.get(DEVICE, 'notes', 'a/f.md')?.cid).toBeNull()

    // Removed: its row becomes a tombstone.
    await rm(join(root, 'at-start.md'))
    await until(async () => links(h)['at-start.md'] === undefined ? true : undefined, 10_000, 'the removed link to go')
    await h.watcher.checkDrift()
    expect(Object.keys(links(h))).toEqual(['a/f.md', 'b/live.md', 'dir-link'])
  })

  it('lists a FIFO as skipped, with why, and never hangs on it', async () => {
    const dir = await useTempDir()
    const root = join(dir, 'notes')
    await mkdir(root, { recursive: true })
    await writeFile(join(root, 'plain.md'), 'plain')
    execFileSync('mkfifo', [join(root, 'pipe')])
    const h = await startWatching(dir)
    await until(async () => (h.watcher.status().folders[0]?.skippedFiles ?? []).some(f => f.path === 'pipe') ? true : undefined, 10_000, 'the FIFO to be listed')
    expect(h.watcher.status().folders[0]?.skippedFiles.find(f => f.path === 'pipe')).toMatchObject({ reason: 'ERR_SPECIAL_FILE', nextRetryAt: null })
    expect(livePaths(h)).toEqual(['plain.md'])
  })
})
