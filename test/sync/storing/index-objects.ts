import { copyFile } from 'node:fs/promises'
import { join } from 'node:path'
import { expect } from 'vitest'
import Database from 'better-sqlite3'
import type { localServiceUnderTest } from '../../helpers/service.js'
import { contentDevice, ok, shareKey, type ContentDevice } from '../../cli/content-devices.js'

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
