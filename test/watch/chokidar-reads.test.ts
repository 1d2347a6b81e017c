import { describe, it, expect, onTestFinished } from 'vitest'
import type { Stats } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { watch } from 'chokidar'
import { readDirectoriesOnly } from '../../src/watch/chokidar-reads.js'
import { READS_AT_ONCE, mostReadsAtOnce } from '../../src/watch/read-gates.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

describe("chokidar's directory reads", () => {
  it('list a directory as its subdirectories alone, and read a bounded number of directories at once', async () => {
    const dir = await useTempDir()
    for (let d = 0; d < 40; d++) {
      await mkdir(join(dir, `d${d}`, 'sub'), { recursive: true })
      for (let i = 0; i < 50; i++) await writeFile(join(dir, `d${d}`, `f${i}.txt`), String(i))
    }
    const watcher = watch(dir, { ignoreInitial: true, atomic: false, ignored: (_path: string, stats?: Stats) => stats?.isFile() ?? false })
    onTestFinished(async () => { await watcher.close() })
    expect(readDirectoriesOnly(watcher)).toBe(true)
    await new Promise<void>(resolve => watcher.once('ready', () => resolve()))
    // chokidar found 81 directories and read each as it found it: all 40 under the root at once, before.
    expect(mostReadsAtOnce()).toBeGreaterThan(0)
    expect(mostReadsAtOnce()).toBeLessThanOrEqual(READS_AT_ONCE)
    const closers = (watcher as unknown as { _closers: Map<string, unknown> })._closers
    for (let d = 0; d < 40; d++) expect(closers.has(join(dir, `d${d}`, 'sub'))).toBe(true)
    // One directory's read hands chokidar its subdirectory, none of its 50 files.
    const read = (watcher as unknown as { _readdirp: (root: string, options: object) => AsyncIterable<{ path: string }> })._readdirp(join(dir, 'd0'), {})
    const names: string[] = []
    for await (const entry of read) names.push(entry.path)
    expect(names).toEqual(['sub'])
  })

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
    expect(readDirectoriesOnly(watcher)).toBe(true)
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
