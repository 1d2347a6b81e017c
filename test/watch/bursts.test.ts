import { describe, it, expect } from 'vitest'
import { spawn } from 'node:child_process'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { watch } from 'chokidar'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { startWatching, livePaths } from './harness.js'

const BURSTS = 5
const DIRS = 20
const FILES = 50

// Another process writes, as a user's tools would: the watcher's event loop does not pace it.
const WRITER = `
const { mkdirSync, writeFileSync } = require('node:fs')
const [root, burst, dirs, files] = process.argv.slice(1)
const pause = new Int32Array(new SharedArrayBuffer(4))
for (let d = 0; d < Number(dirs); d++) {
  const sub = root + '/b' + burst + '-d' + d
  mkdirSync(sub, { recursive: true })
  for (let f = 0; f < Number(files); f++) {
    writeFileSync(sub + '/f' + f + '.txt', burst + '/' + d + '/' + f)
    // A shell loop's pace, not a tight one: the directory fills while the watcher sets up its watch.
    if (f % 5 === 4) Atomics.wait(pause, 0, 0, 1)
  }
}`

async function burst (root: string, b: number): Promise<void> {
  const child = spawn(process.execPath, ['-e', WRITER, root, String(b), String(DIRS), String(FILES)], { stdio: 'inherit' })
  await new Promise<void>((resolve, reject) => child.on('exit', code => { code === 0 ? resolve() : reject(new Error(`writer exited ${String(code)}`)) }))
}

describe('bursts of files in new directories', () => {
  it('indexes every file, without a restart, however fast the directories fill', async () => {
    const dir = await useTempDir()
    const h = await startWatching(dir)
    const expected: string[] = []
    for (let b = 0; b < BURSTS; b++) {
      await burst(h.root, b)
      for (let d = 0; d < DIRS; d++) for (let f = 0; f < FILES; f++) expected.push(`b${b}-d${d}/f${f}.txt`)
    }
    expected.sort()
    let missing: string[] = []
    await until(async () => {
      await h.watcher.current()
      const have = new Set(livePaths(h))
      missing = expected.filter(p => !have.has(p))
      return missing.length === 0 ? true : undefined
    }, 8_000, "every file of the bursts to be indexed", 250).catch(() => undefined)
    expect(missing.slice(0, 5), `${missing.length} of ${expected.length} files never reached the index`).toEqual([])
    expect(livePaths(h)).toEqual(expected)
  })

  // FolderWatcher.watched() reads chokidar's `_closers` to know a new directory's watch is up;
  // without it, it falls back to a fixed wait and the race above could come back unnoticed.
  it('still finds chokidar\'s sign that a directory is watched', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'sub'))
    const watcher = watch(dir, { ignoreInitial: true })
    try {
      await new Promise<void>(resolve => watcher.once('ready', () => resolve()))
      const closers = (watcher as unknown as { _closers?: unknown })._closers
      expect(closers).toBeInstanceOf(Map)
      expect((closers as Map<string, unknown>).has(join(dir, 'sub'))).toBe(true)
    } finally {
      await watcher.close()
    }
  })
})
