import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { STATE_NAMES } from '../../config/index.js'
import type { Index } from '../../index/index.js'
import { nextIndexBatch, putIndexObject } from './content-index-batch.js'
import { contentSealing } from './store-content.js'
import type { Repository } from '../repository.js'
import { testKnob } from '../../util/test-knob.js'

/** Own index objects past which a prune writes them again as few: each pass of storing adds one. Tests make it small. */
const COMPACT_AT = testKnob('CIDSYNC_TEST_INDEX_COMPACT_AT', 32)

export interface CompactIndexInit {
  readonly index: Index
  readonly deviceId: string
  readonly signal?: AbortSignal
}

/**
 * Writes this device's content records again into as few index objects as they fit in, once its
 * own index objects pass {@link COMPACT_AT}, and answers the objects they replace: a prune deletes
 * those (docs/content-format.md, "Content index"). Each storing pass uploads an object, so a
 * daemon adds one a publish, and a new device reads every one. The new objects hold every record
 * the old ones did (a record's newest version), so a reader loses nothing when the old go.
 */
export async function compactOwnIndex (repository: Repository, init: CompactIndexInit): Promise<string[]> {
  const { config, store } = repository
  const own = store.contentIndex.ownObjects(init.deviceId)
  if (own.length < COMPACT_AT) return []
  const { key } = contentSealing(config, repository.passphrase)
  // Plain content has no index objects: without a key, nobody could tell a device's from the service's.
  if (key === undefined) return []
  const spool = join(config.stateDir, STATE_NAMES.contentSpool)
  await mkdir(spool, { recursive: true, mode: 0o700 })
  const made = new Set<string>()
  for (let after = 0; ;) {
    // A record too large for any index object was never sent: left out here too.
    const batch = nextIndexBatch(init.index, init.deviceId, key.keyId, after, () => {})
    if (batch === undefined) break
    if (batch.records.length > 0) {
      const cid = await putIndexObject(repository, init.deviceId, batch.records, spool, init.signal)
      store.contentIndex.noteCompacted(init.deviceId, batch.last, cid, batch.records.length)
      made.add(cid)
    }
    after = batch.last
  }
  // The same records sealed alike would be the same object: never one to delete.
  return own.filter(cid => !made.has(cid))
}
