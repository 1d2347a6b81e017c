import { describe, it, expect, onTestFinished } from 'vitest'
import type { Stats } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { watch } from 'chokidar'
import { statDirectoriesOnly } from '../../src/watch/chokidar-reads.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

describe("chokidar's directory reads", () => {
  it('stat directories and links only: no file reaches the ignore check, every directory is watched', async () => {
    const dir = await useTempDir()
    for (const sub of ['a', 'a/b', 'c']) {
      await mkdir(join(dir, sub), { recursive: true })
      for (let i = 0; i < 20; i++) await writeFile(join(dir, sub, `f${i}.txt`), String(i))
    }
    const judged: Array<{ path: string, kind: string }> = []
    const watcher = watch(dir, {
      ignoreInitial: true,
      atomic: false,
      ignored: (path: string, stats?: Stats) => {
        if (stats !== undefined) judged.push({ path, kind: stats.isFile() ? 'file' : stats.isDirectory() ? 'dir' : 'other' })
        return stats?.isFile() ?? false
      }
    })
    onTestFinished(async () => { await watcher.close() })
    expect(statDirectoriesOnly(watcher)).toBe(true)
    await new Promise<void>(resolve => watcher.once('ready', () => resolve()))
    // Before, chokidar lstat'ed all 60 files and handed each to the check.
    expect(judged.filter(j => j.kind === 'file')).toEqual([])
    // chokidar asks about a directory more than once; the root too.
    expect([...new Set(judged.filter(j => j.kind === 'dir' && j.path !== dir).map(j => j.path.slice(dir.length + 1)))].sort()).toEqual(['a', 'a/b', 'c'])
    // A directory made later is still found and watched, and a file written in it is reported.
    const events: string[] = []
    watcher.on('raw', (_event: string, filename: string | null) => { if (filename !== null) events.push(filename) })
    await mkdir(join(dir, 'c', 'new'))
    await until(async () => ((watcher as unknown as { _closers: Map<string, unknown> })._closers.has(join(dir, 'c', 'new')) ? true : undefined), 10_000, 'the new directory to be watched')
    await writeFile(join(dir, 'c', 'new', 'later.txt'), 'x')
    await until(async () => (events.includes('later.txt') ? true : undefined), 10_000, 'the write in the new directory to be reported')
    expect(judged.filter(j => j.kind === 'file')).toEqual([])
  })
})
