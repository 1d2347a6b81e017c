import { mkdir } from 'node:fs/promises'
import { isAbsolute, join } from 'node:path'
import { STATE_NAMES } from '../../config/index.js'
import type { Index } from '../../index/index.js'
import { putIndexObject } from './content-index-batch.js'
import { indexBatches } from './index-batches.js'
import { contentSealing } from './store-content.js'
import type { Repository } from '../repository.js'
import { failpoint } from '../../util/failpoint.js'
import { testKnob } from '../../util/test-knob.js'

/** Own index objects since the last full compaction past which a prune compacts them: each pass of storing adds one. Tests make it small. */
const COMPACT_AT = testKnob('CIDSYNC_TEST_INDEX_COMPACT_AT', 32)

/**
 * The records written since the last full compaction, as a share of what it wrote, past which the
 * next compaction writes everything again. Between full ones, a compaction writes only what came
 * since; a full one waits for a quarter as many new records as the one before wrote.
 */
const FULL_AFTER_SHARE = 0.25

/** Records to write again from which they are read on a thread of their own, beside this one's work. Tests make it small. */
const THREAD_AT = testKnob('CIDSYNC_TEST_INDEX_THREAD_AT', 20_000)

export interface CompactIndexInit {
  readonly index: Index
  readonly deviceId: string
  readonly signal?: AbortSignal
}

/**
 * Writes this device's content records again into few index objects, once its own objects since
 * the last full compaction pass {@link COMPACT_AT}, and answers the objects they replace: a prune
 * deletes those (docs/retention.md, "Content index objects"). Each storing pass uploads an object,
 * so a daemon adds one a publish, and a new device reads every one.
 *
 * Only the records after the last full compaction are written again, and the objects since it
 * replaced: the full compaction's own stay, so a prune's cost follows what changed, not what is
 * held. All are written again when there is no full compaction to build on, when half of what the
 * objects hold is versions since replaced, or when the records since it reach
 * {@link FULL_AFTER_SHARE} of it. A reader takes each record's newest version from whichever object
 * holds it, so it loses nothing when the replaced objects go.
 */
export async function compactOwnIndex (repository: Repository, init: CompactIndexInit): Promise<string[]> {
  const { config, store } = repository
  const state = store.contentIndex
  // Objects a killed prune was deleting were replaced already: they go, and count for nothing.
  const dying = new Set(store.mirrorLog.deleting())
  state.adoptRead(init.deviceId)
  const all = state.ownObjects(init.deviceId)
  const own = all.filter(cid => !dying.has(cid))
  const mine = new Set(own)
  // A base stands while each of its objects is still this device's: else everything is written again.
  const recorded = state.compactionBase(init.deviceId)
  const base = recorded !== undefined && recorded.objects.every(cid => mine.has(cid)) ? recorded : undefined
  const inBase = new Set(base?.objects ?? [])
  const since = own.filter(cid => !inBase.has(cid))
  if (since.length < COMPACT_AT) return all.filter(cid => dying.has(cid))
  const { key } = contentSealing(config, repository.passphrase)
  // Plain content has no index objects: without a key, nobody could tell a device's from the service's.
  if (key === undefined) return all.filter(cid => dying.has(cid))
  const records = init.index.content
  // Counted only when there is a base to weigh.
  const full = base === undefined ||
    state.ownRecords(own) >= 2 * records.recordCount(init.deviceId) ||
    records.recordCount(init.deviceId, base.seq) >= FULL_AFTER_SHARE * state.ownRecords(base.objects)
  const spool = join(config.stateDir, STATE_NAMES.contentSpool)
  await mkdir(spool, { recursive: true, mode: 0o700 })
  const made = new Set<string>()
  const from = full || base === undefined ? 0 : base.seq
  let after = from
  const onThread = isAbsolute(init.index.path) && records.recordCount(init.deviceId, from, THREAD_AT) >= THREAD_AT
  for await (const batch of indexBatches({ index: init.index, deviceId: init.deviceId, keyId: key.keyId, after: from, onThread })) {
    if (batch.records.count > 0) {
      const cid = await putIndexObject(repository, init.deviceId, batch.records, spool, init.signal)
      state.noteCompacted(init.deviceId, batch.last, cid, batch.records.count)
      made.add(cid)
      failpoint('prune:index-compacted')
    }
    after = batch.last
  }
  // Kept once every new object is noted: a kill before leaves the last base standing, and the new
  // objects are some of those since it, replaced by the next compaction.
  if (full) state.noteCompactionBase(init.deviceId, after, [...made])
  // The same records sealed alike would be the same object: never one to delete.
  return [...(full ? own : since), ...all.filter(cid => dying.has(cid))].filter(cid => !made.has(cid))
}
