import { describe, expect, it, onTestFinished } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import pino from 'pino'
import { openIndex } from '../../src/index/index.js'
import { HashPool } from '../../src/watch/index.js'
import { ChangeWriter } from '../../src/watch/change-writer.js'
import { FolderIndexer } from '../../src/watch/folder-indexer.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until, within } from '../helpers/wait.js'

const DEVICE = '00000000-0000-4000-8000-000000000001'

/** Timers that keep the event loop alive (a settle timer does; so would one leaked by a stopped folder). */
const liveTimers = (): number => process.getActiveResourcesInfo().filter(r => r === 'Timeout').length

/**
 * One folder's indexer over `dir/notes` with `files` small files, its own pool (one thread, so
 * hashing takes a while) and a writer that holds changes (nothing commits during the test, so
 * every change the folder hands over stays visible as `writer.pending`).
 */
async function folderWith (dir: string, files: number, settleMs: number): Promise<{ indexer: FolderIndexer, pool: HashPool, writer: ChangeWriter, notes: string }> {
  const notes = join(dir, 'notes')
  await mkdir(notes, { recursive: true })
  for (let i = 0; i < files; i++) await writeFile(join(notes, `file-${i}.txt`), `content ${i} `.repeat(200))
  const index = openIndex(join(dir, 'state', 'index.sqlite'))
  index.entries.registerDevice(DEVICE, 'test')
  const pool = new HashPool({ workers: 1 })
  const writer = new ChangeWriter(index.entries, DEVICE, { flushMs: 600_000 })
  const indexer = new FolderIndexer(
    { entries: index.entries, pool, writer, logger: pino({ level: 'silent' }), deviceId: DEVICE },
    { folder: { name: 'notes', path: notes, ignore: [], followSymlinks: false }, profile: 'kubo-cidv1', settleMs }
  )
  onTestFinished(async () => {
    await indexer.stop()
    await pool.close()
    writer.close()
    index.close()
  })
  return { indexer, pool, writer, notes }
}

describe('stopping a folder leaves nothing of it running', () => {
  it('mid-hash: the hashes that answer after the stop write nothing (failed before: each answer still became a row)', async () => {
    const { indexer, pool, writer } = await folderWith(await useTempDir(), 3_000, 50)
    const started = indexer.start()
    await until(() => indexer.progress().hashed > 0 && pool.pending > 0 ? true : undefined, 60_000, 'hashing to be under way', 2)
    await indexer.stop()
    const atStop = writer.pending
    await within(started, 20_000, 'start() to end once stopped')
    // Every job the folder handed the pool has answered: none of the answers wrote.
    await until(() => pool.pending === 0 ? true : undefined, 60_000, 'the pool to answer every job it held')
    expect(writer.pending).toBe(atStop)
    expect(indexer.progress()).toMatchObject({ state: 'stopped', toHash: 0 })
  })

  it('mid-scan: the scan ends with the stop, and nothing is queued or written after it', async () => {
    const { indexer, writer } = await folderWith(await useTempDir(), 3_000, 50)
    const started = indexer.start()
    await until(() => indexer.progress().state === 'scanning' ? true : undefined, 20_000, 'the scan to run', 2)
    await indexer.stop()
    const atStop = writer.pending
    // Resolves only once the scan thread has been ended (scan.ts awaits its termination).
    await within(started, 20_000, 'start() to end once stopped')
    expect(await indexer.scan()).toBe(false)
    expect(indexer.progress().toHash).toBe(0)
    expect(writer.pending).toBe(atStop)
  })

  it('while paths settle: their timers go with the stop, and none of them looks or writes later', async () => {
    const { indexer, writer, notes } = await folderWith(await useTempDir(), 0, 600_000)
    await within(indexer.start(), 20_000, 'the folder to be watched')
    await within(indexer.idle(), 20_000, 'the folder to be idle')
    const before = liveTimers()
    for (let i = 0; i < 5; i++) await writeFile(join(notes, `new-${i}.txt`), 'new')
    // Each path waits ten minutes to settle: its timer is all there is of it.
    await until(() => indexer.progress().toHash === 5 ? true : undefined, 20_000, 'the new files to be settling')
    expect(liveTimers()).toBeGreaterThanOrEqual(before + 5)
    await indexer.stop()
    expect(indexer.progress().toHash).toBe(0)
    await until(() => liveTimers() <= before ? true : undefined, 10_000, 'the settle timers to be cleared')
    expect(writer.pending).toBe(0)
  })
})
