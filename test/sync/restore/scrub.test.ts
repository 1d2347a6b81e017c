import { describe, expect, it } from 'vitest'
import { copyFileSync } from 'node:fs'
import { join } from 'node:path'
import pino from 'pino'
import Database from 'better-sqlite3'
import { indexPath, openIndex } from '../../../src/index/index.js'
import { publish, restore, SNAPSHOT_PROFILE } from '../../../src/sync/index.js'
import { exportKey, importKey, writeSnapshot } from '../../../src/snapshot/index.js'
import { EXTERNAL, serviceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { closeDeviceIndex, restoring, syncDevice, writeRows, syncOf } from '../../helpers/sync-device.js'

const logger = pino({ level: 'silent' })
const NS = 'restore-scrub'
const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'

/** What the restored index holds of the publisher's file besides its rows. */
function leftovers (path: string): { stats: string[], freePages: number, rows: number } {
  const db = new Database(path, { readonly: true })
  try {
    return {
      stats: db.prepare("SELECT name FROM sqlite_schema WHERE name LIKE 'sqlite_stat%' ORDER BY name").pluck().all() as string[],
      freePages: db.pragma('freelist_count', { simple: true }) as number,
      rows: db.prepare('SELECT COUNT(*) FROM entries').pluck().get() as number
    }
  } finally {
    db.close()
  }
}

describe.skipIf(EXTERNAL)('a restored index', () => {
  it('carries none of the publisher\'s planner statistics or free pages', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: NS })
    writeRows(a, ...Array.from({ length: 200 }, (_, i) => `file-${i}.md`))
    // A holder of the key writes the file it likes: statistics that steer the plans, pages of old bytes.
    const crafted = join(root, 'crafted.sqlite')
    a.index.db.exec('ANALYZE')
    a.index.db.exec("CREATE TABLE junk (b BLOB); INSERT INTO junk SELECT randomblob(4000) FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) SELECT i FROM n); DROP TABLE junk")
    a.index.db.pragma('wal_checkpoint(TRUNCATE)')
    copyFileSync(a.index.path, crafted)
    const before = leftovers(crafted)
    expect(before.stats).toEqual(['sqlite_stat1', 'sqlite_stat4'])
    expect(before.freePages).toBeGreaterThan(50)

    const file = join(root, 'crafted.snap')
    await writeSnapshot({ index: { copyTo: (to) => { copyFileSync(crafted, to) } }, stateDir: a.config.stateDir, path: file, encryption: 'aes-256-gcm', device: A })
    const { cid } = await clients.objects.put(file, SNAPSHOT_PROFILE)
    await clients.pointers.put({ snapshotCid: cid, engine: 'cidsync-sqlite/1', namespace: NS, network: 'mainnet', memories: 1 })

    const b = await syncDevice(root, 'b', B, { namespace: NS })
    importKey(b.config.stateDir, exportKey(a.config.stateDir))
    closeDeviceIndex(b)
    await restore(restoring(clients, b.config), { namespace: NS, network: 'mainnet', force: true })
    expect(leftovers(indexPath(b.config.stateDir))).toEqual({ stats: [], freePages: 0, rows: 200 })

    // A publish of /2 segments on top restores clean too, the base's file scrubbed as it is built.
    await publish(syncOf(a, clients, logger))
    await restore(restoring(clients, b.config), { namespace: NS, network: 'mainnet', force: true })
    expect(leftovers(indexPath(b.config.stateDir))).toMatchObject({ stats: [], freePages: 0 })
    const back = openIndex(indexPath(b.config.stateDir), { readonly: true })
    expect(back.entries.list({}).length).toBe(200)
    back.close()
  })
})
