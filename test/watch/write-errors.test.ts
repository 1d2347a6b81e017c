import { describe, it, expect, afterEach } from 'vitest'
import { mkdir, writeFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import pino from 'pino'
import { openIndex, type Index } from '../../src/index/index.js'
import { createWatcher, type Watcher } from '../../src/watch/index.js'
import { bytesCid, cidProfile } from '../../src/content/index.js'
import type { IndexWriteFatalError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { within, until } from '../helpers/wait.js'

const DEVICE = '00000000-0000-4000-8000-000000000001'
const cidOf = (text: string): string => bytesCid(Buffer.from(text), cidProfile('kubo-cidv1')).toString()

const open: Array<{ index: Index, watcher: Watcher }> = []
afterEach(async () => {
  for (const h of open.splice(0)) {
    await h.watcher.stop()
    h.index.close()
  }
})

async function start (dir: string, options: { maxPending?: number, onFatal?: (err: IndexWriteFatalError) => void } = {}): Promise<{ root: string, index: Index, watcher: Watcher }> {
  const root = join(dir, 'notes')
  await mkdir(root, { recursive: true })
  await writeFile(join(root, 'kept.md'), 'kept')
  await writeFile(join(root, 'doomed.md'), 'doomed')
  const index = openIndex(join(dir, 'state', 'index.sqlite'))
  const watcher = createWatcher({ index, logger: pino({ level: 'silent' }), deviceId: DEVICE }, {
    folders: [{ name: 'notes', path: root, ignore: [], followSymlinks: false }],
    profile: 'kubo-cidv1',
    hashWorkers: 2,
    settleMs: 30,
    retry: { writeMinMs: 50, writeMaxMs: 200, maxPending: options.maxPending },
    onProgress: (event) => { if (event.type === 'index.fatal') options.onFatal?.(event.error) }
  })
  open.push({ index, watcher })
  await within(watcher.start(), 10_000, 'the watcher to start')
  await within(watcher.current(), 10_000, 'the index to be current')
  return { root, index, watcher }
}

/** SQLite answers SQLITE_FULL once the file would grow past its current size: a full disk, for real. */
function fillDisk (index: Index): void {
  index.db.pragma('wal_checkpoint(TRUNCATE)')
  const pages = index.db.pragma('page_count', { simple: true }) as number
  index.db.pragma(`max_page_count = ${pages}`)
}

const live = (index: Index): Record<string, string | null> =>
  Object.fromEntries(index.entries.list({ deviceId: DEVICE }).map(e => [e.path, e.cid]))

describe('index writes that fail', () => {
  it('keep the batch on a full disk, say so in status, and write every change once there is room again', async () => {
    const dir = await useTempDir()
    const { root, index, watcher } = await start(dir)
    fillDisk(index)
    // Long names so the rows need pages the file cannot grow to hold.
    const name = (i: number): string => `file-${String(i).padStart(4, '0')}-${'x'.repeat(180)}.md`
    for (let i = 0; i < 80; i++) await writeFile(join(root, name(i)), `content ${i}`)
    const failing = await until(() => {
      const s = watcher.status()
      return s.writer.state === 'retrying' && s.writeErrors >= 2 ? s : undefined
    }, 10_000, 'writes to fail and be retried')
    expect(failing.writer.lastError).toMatchObject({ code: 'SQLITE_FULL', message: expect.stringMatching(/is full: free some space; \d+ changes are kept and written again once it can/) })
    expect(failing.writer.pending).toBeGreaterThan(0)
    expect(failing.writer.retryAt).toBeGreaterThan(Date.now() - 1_000)

    // Changes made while it fails merge into the kept batch: the newest wins.
    await writeFile(join(root, name(0)), 'rewritten while the disk was full')
    await rm(join(root, 'doomed.md'))
    const errorsBefore = watcher.status().writeErrors
    await until(() => {
      const s = watcher.status()
      return s.folders[0]?.toHash === 0 && s.writer.state === 'retrying' && s.writeErrors > errorsBefore ? true : undefined
    }, 10_000, 'the later changes to join the batch')
    expect(live(index)['doomed.md']).toBe(cidOf('doomed'))

    index.db.pragma('max_page_count = 1073741823')
    await within(watcher.current(), 10_000, 'the kept changes to be written')
    const rows = live(index)
    expect(Object.keys(rows)).toHaveLength(81)
    expect(rows['doomed.md']).toBeUndefined()
    expect(rows[name(0)]).toBe(cidOf('rewritten while the disk was full'))
    expect(rows[name(79)]).toBe(cidOf('content 79'))
    const after = watcher.status()
    expect(after.writer).toMatchObject({ state: 'ok', pending: 0, attempts: 0, lastError: { code: 'SQLITE_FULL' } })
    expect(after.rowsWritten).toBeGreaterThanOrEqual(81)
  })

  it('gives up cleanly, telling its owner why, once more changes wait than it may hold', async () => {
    const dir = await useTempDir()
    const fatal: IndexWriteFatalError[] = []
    const { root, index, watcher } = await start(dir, { maxPending: 40, onFatal: err => fatal.push(err) })
    fillDisk(index)
    for (let i = 0; i < 80; i++) await writeFile(join(root, `f-${i}-${'y'.repeat(200)}.md`), `n ${i}`)
    await until(() => fatal.length > 0 ? true : undefined, 10_000, 'the writer to give up').catch((err: Error) => { throw new Error(`${err.message}: ${JSON.stringify(watcher.status().writer)}`) })
    expect(fatal).toHaveLength(1)
    expect(fatal[0]?.code).toBe('ERR_INDEX_WRITE_FATAL')
    expect(fatal[0]?.message).toMatch(/^the daemon stopped: \d+ changes are waiting to be written: the index .* cannot be written \(SQLITE_FULL\): the disk .* is full: free some space\. Nothing is lost/)
    expect(watcher.status().writer.state).toBe('stopped')
    // Stopping does not hang on the batch it could not write.
    await within(watcher.stop(), 5_000, 'the watcher to stop')
  })
})
