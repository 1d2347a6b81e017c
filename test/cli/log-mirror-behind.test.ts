import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, type ContentDevice } from './content-devices.js'
import { historyChainKey } from '../../src/find/index.js'

interface LogJson { publishesKept: number, forgottenVersions: number, versions: Array<{ size: number }> }
const heads = async (d: ContentDevice): Promise<string[]> => (JSON.parse((await ok(d, ['history', '--json'])).stdout) as Array<{ cid: string }>).map(r => r.cid)

describe.skipIf(EXTERNAL)('log --from a mirror behind the primary', () => {
  it('a mirror whose pointer holds an older publish (merely behind) does not call the newer versions forgotten', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a', 'compact_after_deltas = 100\n')
    for (let i = 0; i < 4; i++) {
      await writeFile(join(a.folder, 'doc.bin'), randomBytes(1000 + i))
      await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: `2026-03-01T0${i + 1}:00:00.000Z` })
    }
    const cids = await heads(a)
    await ok(a, ['log', 'notes/doc.bin', '--json'])
    // What fillHistory leaves for `--from usb` when usb's pointer holds cids[3] (the oldest, all walked already):
    // the walk stops at once, and notes that publish as usb's head.
    const db = new Database(join(a.state, 'history-rows.sqlite'))
    db.prepare('INSERT OR REPLACE INTO cache_meta (key, value) VALUES (?, ?)').run(`head ${historyChainKey('content-faults', 'mainnet', 'usb')}`, cids[3])
    db.close()
    const j = JSON.parse((await a.run(['log', 'notes/doc.bin', '--cached', '--from', 'usb', '--json'])).stdout) as LogJson
    expect(j.forgottenVersions).toBe(0)
  }, 240_000)
})
