import { describe, it, expect } from 'vitest'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { startWatching, livePaths, type Harness } from './harness.js'

const run = promisify(execFile)
const NAME = 'd'.repeat(200)
/** 25 levels of 201 characters: past PATH_MAX (4096), so made by a process that steps down one level at a time. */
const DEPTH = 25
const MAKE = `
const { mkdirSync, writeFileSync } = require('node:fs')
process.chdir(process.argv[1])
for (let i = 0; i < Number(process.argv[3]); i++) { mkdirSync(process.argv[2]); process.chdir(process.argv[2]) }
writeFileSync('f.txt', 'far')`

async function makeDeepChain (root: string): Promise<void> {
  await mkdir(join(root, 'deep'))
  await run(process.execPath, ['-e', MAKE, join(root, 'deep'), NAME, String(DEPTH)], { timeout: 10_000 })
}

const folder = (h: Harness): { state: string, error?: string, skippedFiles: ReadonlyArray<{ path: string, reason: string }> } =>
  h.watcher.status().folders[0] as unknown as { state: string, error?: string, skippedFiles: ReadonlyArray<{ path: string, reason: string }> }

describe('a path too long for the system', () => {
  it('is listed as skipped with ENAMETOOLONG; the folder stays watching, and the rest is indexed', async () => {
    const dir = await useTempDir()
    const h = await startWatching(dir, { skipRetryMs: 100 })
    await makeDeepChain(h.root)
    await writeFile(join(h.root, 'near.txt'), 'near')
    await until(async () => {
      await h.watcher.current()
      return livePaths(h).includes('near.txt') && folder(h).skippedFiles.some(f => f.reason === 'ENAMETOOLONG') ? true : undefined
    }, 15_000, 'near.txt indexed and the long path listed').catch((err: Error) => { throw new Error(`${err.message}; folder: ${JSON.stringify(folder(h))}`) })
    expect(folder(h)).toMatchObject({ state: 'watching' })
    expect(folder(h).error).toBeUndefined()
    const report = await h.watcher.checkDrift()
    expect(report.folders[0]?.repaired).not.toBeNull()
    await run('rm', ['-rf', join(h.root, 'deep')], { timeout: 10_000 })
    await writeFile(join(h.root, 'later.txt'), 'later')
    await until(async () => {
      await h.watcher.current()
      return livePaths(h).includes('later.txt') && folder(h).skippedFiles.length === 0 ? true : undefined
    }, 15_000, 'later.txt indexed and the long path no longer listed').catch((err: Error) => { throw new Error(`${err.message}; folder: ${JSON.stringify(folder(h))}`) })
    expect(folder(h)).toMatchObject({ state: 'watching' })
  })

  it('found by the startup scan: listed as skipped, the folder watching', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'notes'))
    await makeDeepChain(join(dir, 'notes'))
    await writeFile(join(dir, 'notes', 'near.txt'), 'near')
    const h = await startWatching(dir, { skipRetryMs: 100 })
    expect(livePaths(h)).toEqual(['near.txt'])
    expect(folder(h)).toMatchObject({ state: 'watching' })
    expect(folder(h).skippedFiles.map(f => f.reason)).toContain('ENAMETOOLONG')
    expect((await h.watcher.checkDrift()).folders[0]?.repaired).toBe(0)
  })
})
