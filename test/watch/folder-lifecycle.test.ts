import { describe, it, expect } from 'vitest'
import { mkdir, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { startWatching, livePaths, type Harness } from './harness.js'

const folder = (h: Harness): { state: string, error: string | undefined } => h.watcher.status().folders[0] as { state: string, error: string | undefined }

async function stateIs (h: Harness, state: string, error?: string): Promise<void> {
  await until(() => {
    const f = folder(h)
    return f.state === state && (error === undefined || (f.error ?? '').includes(error)) ? true : undefined
  }, 10_000, `the folder to be ${state}${error === undefined ? '' : ` (${error})`}`)
    .catch((err: Error) => { throw new Error(`${err.message}; it is ${JSON.stringify(folder(h))}`) })
}

async function indexed (h: Harness, paths: string[]): Promise<void> {
  await until(async () => {
    await h.watcher.current()
    return JSON.stringify(livePaths(h)) === JSON.stringify(paths) ? true : undefined
  }, 10_000, `the index to hold ${JSON.stringify(paths)}`)
    .catch((err: Error) => { throw new Error(`${err.message}; it holds ${JSON.stringify(livePaths(h))}`) })
}

describe('a folder that goes away and comes back while watched', () => {
  it('removed and made again (rm -rf; mkdir): an error meanwhile, then later files are indexed', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await writeFile(join(dir, 'notes', 'a.md'), 'a')
    const h = await startWatching(dir)
    await rm(h.root, { recursive: true })
    await mkdir(h.root)
    await stateIs(h, 'error', 'notes')
    expect(h.watcher.status().state).toBe('degraded')
    await writeFile(join(h.root, 'b.md'), 'b')
    await stateIs(h, 'watching')
    await indexed(h, ['b.md'])
    expect(folder(h).error).toBeUndefined()
    await writeFile(join(h.root, 'c.md'), 'c')
    await indexed(h, ['b.md', 'c.md'])
  })

  it('moved away and back: an error naming the fix while away, its rows kept, then watched again', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await writeFile(join(dir, 'notes', 'a.md'), 'a')
    const h = await startWatching(dir)
    await rename(h.root, join(dir, 'away'))
    await stateIs(h, 'error', 'does not exist: create or mount it')
    await writeFile(join(dir, 'away', 'while-away.md'), 'x')
    expect(livePaths(h)).toEqual(['a.md'])
    await rename(join(dir, 'away'), h.root)
    await stateIs(h, 'watching')
    await indexed(h, ['a.md', 'while-away.md'])
    await writeFile(join(h.root, 'later.md'), 'later')
    await indexed(h, ['a.md', 'later.md', 'while-away.md'])
  })

  it('missing at start and made later: picked up without a restart', async () => {
    const dir = await useTempDir()
    const h = await startWatching(dir, { keepRoot: true })
    expect(folder(h)).toMatchObject({ state: 'error', error: expect.stringContaining('does not exist') })
    await mkdir(h.root)
    await writeFile(join(h.root, 'first.md'), 'first')
    await stateIs(h, 'watching')
    await indexed(h, ['first.md'])
    await writeFile(join(h.root, 'second.md'), 'second')
    await indexed(h, ['first.md', 'second.md'])
  })

  it('unmounted (an empty directory left in its place): an error, every row kept; a remount with other files is indexed', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes', 'sub'), { recursive: true })
    await writeFile(join(dir, 'notes', 'a.md'), 'a')
    await writeFile(join(dir, 'notes', 'sub', 'b.md'), 'b')
    const h = await startWatching(dir)
    // The disk goes and leaves its mount point, another directory, empty, in one step.
    await mkdir(join(dir, 'mount-point'))
    await rename(h.root, join(dir, 'disk'))
    await rename(join(dir, 'mount-point'), h.root)
    await stateIs(h, 'error', 'empty directory (was a disk unmounted?)')
    await until(async () => { await h.watcher.current(); return true }, 5_000, 'the folder to settle')
    expect(livePaths(h)).toEqual(['a.md', 'sub/b.md'])
    // Another disk, with other files, mounted there.
    await mkdir(join(dir, 'other-disk'))
    await writeFile(join(dir, 'other-disk', 'c.md'), 'c')
    await rm(h.root, { recursive: true })
    await rename(join(dir, 'other-disk'), h.root)
    await stateIs(h, 'watching')
    await indexed(h, ['c.md'])
  })
})

describe('a subdirectory that goes away and comes back while watched', () => {
  it('moved out and back before its deletes are committed: every file stays indexed', async () => {
    const dir = await useTempDir()
    const files = Array.from({ length: 20 }, (_, i) => `seq1/f${i}`).sort()
    await mkdir(join(dir, 'notes', 'seq1'), { recursive: true })
    for (const f of files) await writeFile(join(dir, 'notes', f), f)
    await mkdir(join(dir, 'outside'))
    // A long batch window holds the deletes uncommitted while the directory comes back.
    const h = await startWatching(dir, { flushMs: 3_000 })
    await indexed(h, files)
    await rename(join(h.root, 'seq1'), join(dir, 'outside', 'seq1'))
    // Its files' tombstones, and its own row's (`seq1/`).
    await until(() => h.watcher.status().writer.pending === files.length + 1 ? true : undefined, 10_000, 'the deletes to be queued')
    await rename(join(dir, 'outside', 'seq1'), join(h.root, 'seq1'))
    await indexed(h, files)
    // Still there once every queued change is written.
    await h.watcher.current()
    expect(h.watcher.status().writer.pending).toBe(0)
    expect(livePaths(h)).toEqual(files)
  })
})
