import { copyFile, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'vitest'
import Database from 'better-sqlite3'
import type { localServiceUnderTest } from '../../helpers/service.js'
import { contentDevice, ok, shareKey, type ContentDevice } from '../../cli/content-devices.js'
import { loadConfig } from '../../../src/config/index.js'
import { indexPath, openIndex, readDeviceId } from '../../../src/index/index.js'
import { MAX_SEALED_CONTENT_INDEX_BYTES, openContentIndex, readSealedHeader } from '../../../src/snapshot/index.js'
import { Repository, SNAPSHOT_PROFILE, SyncStore } from '../../../src/sync/index.js'
import { contentSealing } from '../../../src/sync/storing/index.js'

export const RETENTION = '[retention]\nkeep_last = 5\nprune_margin = "0s"\n'
/** A prune compacts once a device has two index objects of its own (since its last full compaction). */
export const COMPACT = { CIDSYNC_TEST_INDEX_COMPACT_AT: '2' }

/** The uploads the service lists under `name`, by CID. */
export async function listed (service: Awaited<ReturnType<typeof localServiceUnderTest>>, name: string): Promise<string[]> {
  const cids: string[] = []
  for await (const o of service.clients.objects.list()) if (o.name === name) cids.push(o.cid)
  return cids.sort()
}

/** The index objects sync.sqlite knows as this device's own. */
export function own (d: ContentDevice): string[] {
  const db = new Database(join(d.state, 'sync.sqlite'), { readonly: true })
  try {
    return (db.prepare("SELECT cid FROM content_index_objects WHERE state = 'own'").pluck().all() as string[]).sort()
  } finally {
    db.close()
  }
}

/**
 * A second device with `a`'s key, holding copies of `names`, publishes at `clock` and stores none
 * of their content again: it learnt every record of them from the index objects left.
 */
export async function storesNothingAgain (root: string, service: Awaited<ReturnType<typeof localServiceUnderTest>>, a: ContentDevice, names: readonly string[], clock: string, config = RETENTION): Promise<ContentDevice> {
  const b = await contentDevice(root, service, 'b', config)
  await shareKey(a, b)
  for (const name of names) await copyFile(join(a.folder, name), join(b.folder, name))
  const packs = await listed(service, 'cidsync-pack.sealed')
  await ok(b, ['snapshot'], { CIDSYNC_TEST_CLOCK: clock })
  expect(await listed(service, 'cidsync-pack.sealed')).toEqual(packs)
  return b
}

/**
 * `a`'s records (under its key) whose newest version no index object of `a` on the service holds:
 * each object fetched and opened. Empty when another device can learn every record.
 */
export async function recordsNotHeld (a: ContentDevice, service: Awaited<ReturnType<typeof localServiceUnderTest>>): Promise<string[]> {
  const store = new SyncStore(a.state)
  const repository = new Repository(loadConfig({ configPath: a.config, env: a.env }), service.clients, { store })
  const index = openIndex(indexPath(a.state), { readonly: true })
  const dir = await mkdtemp(join(tmpdir(), 'cidsync-index-objects-'))
  try {
    const deviceId = readDeviceId(a.state) as string
    const { key } = contentSealing(repository.config, repository.passphrase)
    const newest = new Map<string, number>()
    for (const cid of await listed(service, 'cidsync-content-index.sealed')) {
      const path = join(dir, cid)
      await repository.objects.getFile(cid, SNAPSHOT_PROFILE, path, { maxBytes: MAX_SEALED_CONTENT_INDEX_BYTES, durable: false })
      if ((await readSealedHeader(path) as { keyId?: string }).keyId !== key?.keyId) continue
      const body = await openContentIndex({ path, name: cid, stateDir: repository.config.stateDir, passphrase: repository.passphrase })
      if (body.device !== deviceId) continue
      for (const r of body.records as Array<{ cid: string, seq: number }>) newest.set(r.cid, Math.max(newest.get(r.cid) ?? 0, r.seq))
    }
    const rows = index.db.prepare('SELECT cid, seq FROM content WHERE device_id = ? AND key_id = ?').all(deviceId, key?.keyId ?? '') as Array<{ cid: string, seq: number }>
    return rows.filter(r => newest.get(r.cid) !== r.seq).map(r => `${r.cid}@${r.seq}`)
  } finally {
    await rm(dir, { recursive: true, force: true })
    store.close()
    index.close()
    await repository.close()
  }
}
