import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { copyFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { EXTERNAL, localServiceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { contentDevice, ok, shareKey, type ContentDevice } from '../../cli/content-devices.js'

const RETENTION = '[retention]\nkeep_last = 5\nprune_margin = "0s"\n'
const COMPACT = { CIDSYNC_TEST_INDEX_COMPACT_AT: '2' }

/** The uploads the service lists under `name`, by CID. */
async function listed (service: Awaited<ReturnType<typeof localServiceUnderTest>>, name: string): Promise<string[]> {
  const cids: string[] = []
  for await (const o of service.clients.objects.list()) if (o.name === name) cids.push(o.cid)
  return cids.sort()
}

/** The index objects sync.sqlite knows as this device's own. */
function own (d: ContentDevice): string[] {
  const db = new Database(join(d.state, 'sync.sqlite'), { readonly: true })
  try {
    return (db.prepare("SELECT cid FROM content_index_objects WHERE state = 'own'").pluck().all() as string[]).sort()
  } finally {
    db.close()
  }
}

describe.skipIf(EXTERNAL)('a prune compacts this device\'s content index objects', () => {
  it('writes them again as one, deletes the old, and another device still learns every record from it', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', RETENTION)
    for (let i = 0; i < 3; i++) {
      await writeFile(join(a.folder, `f${i}.bin`), randomBytes(10_000 + i))
      await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: `2026-03-01T0${i + 1}:00:00.000Z` })
    }
    const before = await listed(service, 'cidsync-content-index.sealed')
    expect(before.length).toBeGreaterThanOrEqual(3)
    expect(own(a)).toEqual(before)

    await ok(a, ['prune'], COMPACT)
    const after = await listed(service, 'cidsync-content-index.sealed')
    expect(after.length).toBe(1)
    expect(before).not.toContain(after[0])
    expect(own(a)).toEqual(after)
    // Below the bound now: a second prune leaves it as it is.
    await ok(a, ['prune'], COMPACT)
    expect(await listed(service, 'cidsync-content-index.sealed')).toEqual(after)

    // Another device with the key, holding the same files, takes a's records from that one object.
    const b = await contentDevice(root, service, 'b', RETENTION)
    await shareKey(a, b)
    for (let i = 0; i < 3; i++) await copyFile(join(a.folder, `f${i}.bin`), join(b.folder, `f${i}.bin`))
    const packs = await listed(service, 'cidsync-pack.sealed')
    await ok(b, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T05:00:00.000Z' })
    expect(await listed(service, 'cidsync-pack.sealed')).toEqual(packs)
  }, 300_000)
})
