import { existsSync } from 'node:fs'
import { rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { NothingAtTimeError } from '../../errors.js'
import { openIndex, type Index } from '../../index/index.js'
import type { ObjectHome } from '../../store/index.js'
import { makeDirsSync } from '../../util/make-dirs.js'
import { buildIndex } from './build-index.js'
import { nothingAtTime, publishAt, type HistoryEntry, type ManifestCache } from './history.js'
import { checkOwnPublishIn } from './own-publish-check.js'
import { prunePast, touchPast } from './past-prune.js'
import type { FetchInit } from './segment-fetch.js'
import type { LastPublished } from '../state/index.js'
import { fetchV1Snapshot } from './v1-snapshot-fetch.js'
import { STATE_NAMES } from '../../config/index.js'

/** Where built past indexes are kept, in the state dir. */
export const PAST_DIR = STATE_NAMES.past

/** A past publish's index, built once and kept in `past/`. */
export interface BuiltPast {
  readonly publish: HistoryEntry
  readonly indexPath: string
  /** Where find keeps its search cache for this index. */
  readonly searchPath: string
  /** Whether the publish records its content (cidsync-sqlite/2): one before cannot bring files back. */
  readonly records: boolean
}

/** An index as a past publish saw it, opened read-only; `close` closes it (the built file is kept). */
export interface PastIndex {
  readonly index: Index
  /** The publish it is: its manifest's CID and time. */
  readonly cid: string
  readonly at: string
  close: () => Promise<void>
}

/**
 * The index as the newest publish at or before `at` saw it (history walked from `start`): built
 * once from that publish's segments into `past/<cid>.sqlite` and kept (a publish never changes).
 * `find --at`, `get --at`, `restore --files --at` and the dashboard share it; the few most
 * recently used are kept (`PAST_KEEP`). `own`: this device's last publish, when `start` is the
 * pointer of its own namespace: a history that lacks it is refused (the service set the pointer back).
 */
export async function pastIndex (clients: ObjectHome, start: string, at: Date, cache: ManifestCache, init: FetchInit, own?: LastPublished): Promise<BuiltPast> {
  const found = await publishAt(clients, start, at, cache, init)
  checkOwnPublishIn(found?.entry, own, at)
  if (found === undefined) throw await nothingAtTime(clients, start, at, cache, init)
  const dir = join(init.stateDir, PAST_DIR)
  makeDirsSync(dir, 0o700)
  // The CID is checked text (it named a verified fetch); only its letters and digits reach the name.
  const name = found.entry.cid.replace(/[^A-Za-z0-9]/g, '')
  const indexPath = join(dir, `${name}.sqlite`)
  if (!existsSync(indexPath)) {
    const staged = `${indexPath}.building-${process.pid}`
    try {
      if (found.manifest === undefined) await fetchV1Snapshot(clients, found.entry.cid, staged, init)
      else await buildIndex(clients, found.manifest, staged, init)
      await rename(staged, indexPath)
    } finally {
      await rm(staged, { force: true })
    }
  }
  await touchPast(indexPath)
  await prunePast(dir, name)
  return { publish: found.entry, indexPath, searchPath: join(dir, `${name}.search.sqlite`), records: found.manifest !== undefined }
}

/**
 * Opens a built past index read-only for a read that brings files back. Exit 3 when the publish
 * holds no content records (one before cidsync-sqlite/2): its files cannot come back.
 */
export function openBuiltPast (built: BuiltPast, at: Date): PastIndex {
  if (!built.records) throw new NothingAtTimeError(`nothing of cidsync-sqlite/2 (with content records) was published at or before ${at.toISOString()}: see \`cidsync history\` for the times there are`)
  const index = openIndex(built.indexPath, { check: false, readonly: true })
  return { index, cid: built.publish.cid, at: built.publish.at, close: async () => { index.close() } }
}
