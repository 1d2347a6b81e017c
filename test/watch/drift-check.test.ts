import { describe, it, expect, afterEach } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import pino from 'pino'
import { openIndex, type Index } from '../../src/index/index.js'
import { createWatcher, type Watcher } from '../../src/watch/index.js'
import { bytesCid, cidProfile } from '../../src/content/index.js'
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

describe('the periodic drift check', () => {
  it('finds and repairs a row lost behind the watcher\'s back without being asked', async () => {
    const dir = await useTempDir()
    const root = join(dir, 'notes')
    await mkdir(join(root, 'sub'), { recursive: true })
    await writeFile(join(root, 'sub', 'kept.md'), 'kept')
    const index = openIndex(join(dir, 'state', 'index.sqlite'))
    const watcher = createWatcher({ index, logger: pino({ level: 'silent' }), deviceId: DEVICE }, {
      folders: [{ name: 'notes', path: root, ignore: [], followSymlinks: false }],
      profile: 'kubo-cidv1',
      hashWorkers: 1,
      settleMs: 20,
      rescanIntervalMs: 300
    })
    open.push({ index, watcher })
    await within(watcher.start(), 10_000, 'the watcher to start')
    expect(index.entries.get(DEVICE, 'notes', 'sub/kept.md')?.cid).toBe(cidOf('kept'))
    index.db.prepare("DELETE FROM entries WHERE path = 'sub/kept.md'").run()
    const drift = await until(() => { const d = watcher.status().drift; return d.totalRepaired === 1 && !d.running ? d : undefined }, 10_000, 'the periodic check to repair the row')
    expect(drift).toMatchObject({ lastRepaired: 1, lastError: null, nextRunAt: expect.any(String) })
    expect(index.entries.get(DEVICE, 'notes', 'sub/kept.md')).toMatchObject({ cid: cidOf('kept'), deleted: false })
    // Later runs find nothing more.
    await until(() => watcher.status().drift.runs >= drift.runs + 2 ? true : undefined, 10_000, 'two more runs')
    expect(watcher.status().drift.totalRepaired).toBe(1)
  })

  it('repairs a live row for a path that is now a directory, once', async () => {
    const dir = await useTempDir()
    const root = join(dir, 'notes')
    await mkdir(join(root, 'x'), { recursive: true })
    await writeFile(join(root, 'x', 'y'), 'b')
    const index = openIndex(join(dir, 'state', 'index.sqlite'))
    const watcher = createWatcher({ index, logger: pino({ level: 'silent' }), deviceId: DEVICE }, {
      folders: [{ name: 'notes', path: root, ignore: [], followSymlinks: false }],
      profile: 'kubo-cidv1',
      hashWorkers: 1,
      settleMs: 20
    })
    open.push({ index, watcher })
    await within(watcher.start(), 10_000, 'the watcher to start')
    // A row left for the file `x` was before the directory took its name (as a missed event leaves it).
    index.entries.apply(DEVICE, [{ kind: 'upsert', folder: 'notes', path: 'x', size: 1, mtimeMs: 1, cid: cidOf('a'), cidProfile: 'kubo-cidv1' }])
    expect((await watcher.checkDrift()).repaired).toBe(1)
    await within(watcher.current(), 10_000, 'the repair to be written')
    expect(index.entries.get(DEVICE, 'notes', 'x')).toMatchObject({ deleted: true })
    expect(index.entries.get(DEVICE, 'notes', 'x/y')).toMatchObject({ cid: cidOf('b'), deleted: false })
    expect((await watcher.checkDrift()).repaired).toBe(0)
  })
})
