import { describe, it, expect, onTestFinished } from 'vitest'
import type { Stats } from 'node:fs'
import { mkdirSync, rmSync } from 'node:fs'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { watch } from 'chokidar'
import { leanWatches } from '../../src/watch/chokidar-watches.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

describe("chokidar's watches, trimmed", () => {
  it('one closer a directory, raw events named by their directory, a removed directory reported and let go', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'a', 'b'), { recursive: true })
    const watcher = watch(dir, { ignoreInitial: true, atomic: false, ignored: (_path: string, stats?: Stats) => stats?.isFile() ?? false })
    onTestFinished(async () => { await watcher.close() })
    const replaced: string[] = []
    const lean = leanWatches(watcher, (path) => { replaced.push(path) })
    expect(lean).toBeDefined()
    await new Promise<void>(resolve => watcher.once('ready', () => resolve()))
    const closers = (watcher as unknown as { _closers: Map<string, unknown[]> })._closers
    for (const path of [dir, join(dir, 'a'), join(dir, 'a', 'b')]) expect(closers.get(path)).toHaveLength(1)

    const raw: string[] = []
    watcher.on('raw', (_event: string, name: string | null, details: unknown) => { raw.push(`${(details as { watchedPath?: string }).watchedPath ?? '?'}:${name ?? ''}`) })
    await writeFile(join(dir, 'a', 'b', 'f.txt'), 'x')
    await until(async () => (raw.includes(`${join(dir, 'a', 'b')}:f.txt`) ? true : undefined), 10_000, 'the write to be reported by its directory')

    const removed: string[] = []
    watcher.on('unlinkDir', (path: string) => { removed.push(path) })
    await rm(join(dir, 'a', 'b'), { recursive: true })
    await until(async () => (removed.includes(join(dir, 'a', 'b')) ? true : undefined), 10_000, 'the removed directory to be reported')
    await until(async () => (closers.has(join(dir, 'a', 'b')) ? undefined : true), 10_000, "the removed directory's watch to be let go")
    // A directory made again is watched again.
    await mkdir(join(dir, 'a', 'b'))
    await until(async () => (closers.has(join(dir, 'a', 'b')) ? true : undefined), 10_000, 'the directory made again to be watched')
  })

  it('a directory removed and made again at once is named as replaced: its watch was on the removed one', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'out'))
    for (let i = 0; i < 50; i++) await writeFile(join(dir, 'out', `f${i}`), 'x')
    const watcher = watch(dir, { ignoreInitial: true, atomic: false, ignored: (_path: string, stats?: Stats) => stats?.isFile() ?? false })
    onTestFinished(async () => { await watcher.close() })
    const replaced: string[] = []
    const lean = leanWatches(watcher, (path) => { replaced.push(path) })
    await new Promise<void>(resolve => watcher.once('ready', () => resolve()))
    expect(lean?.identityOf(join(dir, 'out'))).toBeTypeOf('string')
    // In one go, as a build or a checkout does: no moment in which chokidar finds the name gone.
    const out = join(dir, 'out')
    rmSync(out, { recursive: true })
    mkdirSync(out)
    await until(async () => (replaced.includes(out) ? true : undefined), 10_000, 'the directory made again to be named as replaced')
  })
})
