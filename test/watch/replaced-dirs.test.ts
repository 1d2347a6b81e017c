import { describe, it, expect } from 'vitest'
import { spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { startWatching, livePaths, type Harness } from './harness.js'

// Another process replaces directories as a build or a checkout does: removed and made again in
// one go (no moment in which the name is missing for long), then filled, then written to later.
const SWAPPER = `
const { mkdirSync, rmSync, writeFileSync } = require('node:fs')
const [root, rounds] = process.argv.slice(1)
const pause = new Int32Array(new SharedArrayBuffer(4))
for (let r = 0; r < Number(rounds); r++) {
  for (const d of ['out', 'out/deep', 'build']) {
    rmSync(root + '/' + d, { recursive: true, force: true })
    mkdirSync(root + '/' + d, { recursive: true })
    for (let f = 0; f < 20; f++) writeFileSync(root + '/' + d + '/r' + r + '-f' + f + '.txt', d + r + f)
  }
  Atomics.wait(pause, 0, 0, 50)
}`

/** The index's live paths once they are `expected`, or as they are after 10 s of waiting for it. */
async function settledPaths (h: Harness, expected: readonly string[]): Promise<string[]> {
  let have: string[] = []
  await until(async () => {
    await h.watcher.current()
    have = livePaths(h)
    return have.join('\n') === expected.join('\n') ? true : undefined
  }, 10_000, 'the index to hold what the directories hold', 250).catch(() => undefined)
  return have
}

describe('directories removed and made again under the same name', () => {
  it('are watched again and walked: every file written into them, before and after, is indexed and nothing of the removed ones stays', async () => {
    const dir = await useTempDir()
    const h = await startWatching(dir)
    for (const d of ['out', 'out/deep', 'build']) {
      mkdirSync(join(h.root, d), { recursive: true })
      for (let f = 0; f < 30; f++) writeFileSync(join(h.root, d, `old-${f}.txt`), 'old')
    }
    await until(async () => { await h.watcher.current(); return livePaths(h).length === 90 ? true : undefined }, 10_000, 'the first files to be indexed', 100)
    const rounds = 3
    const child = spawn(process.execPath, ['-e', SWAPPER, h.root, String(rounds)], { stdio: 'inherit' })
    await new Promise<void>((resolve, reject) => child.on('exit', code => { code === 0 ? resolve() : reject(new Error(`swapper exited ${String(code)}`)) }))
    // Later writes, into directories whose first watch was on the removed ones.
    for (const d of ['out', 'out/deep', 'build']) writeFileSync(join(h.root, d, 'later.txt'), 'later')
    const last = rounds - 1
    const expected = ['out', 'out/deep', 'build'].flatMap(d => [...Array.from({ length: 20 }, (_, f) => `${d}/r${last}-f${f}.txt`), `${d}/later.txt`]).sort()
    expect(await settledPaths(h, expected)).toEqual(expected)
  })

  it('a directory moved away and one made under its name at once: the moved files leave that name, the new ones are indexed', async () => {
    const dir = await useTempDir()
    const h = await startWatching(dir)
    mkdirSync(join(h.root, 'd'))
    for (let f = 0; f < 30; f++) writeFileSync(join(h.root, 'd', `old-${f}.txt`), 'old')
    await until(async () => { await h.watcher.current(); return livePaths(h).length === 30 ? true : undefined }, 10_000, 'the first files to be indexed', 100)
    const child = spawn(process.execPath, ['-e', "const fs = require('node:fs'); const [root] = process.argv.slice(1); fs.renameSync(root + '/d', root + '/d.old'); fs.mkdirSync(root + '/d'); fs.writeFileSync(root + '/d/new.txt', 'new')", h.root], { stdio: 'inherit' })
    await new Promise<void>((resolve, reject) => child.on('exit', code => { code === 0 ? resolve() : reject(new Error(`mover exited ${String(code)}`)) }))
    const expected = ['d/new.txt', ...Array.from({ length: 30 }, (_, f) => `d.old/old-${f}.txt`)].sort()
    expect(await settledPaths(h, expected)).toEqual(expected)
  })
})
