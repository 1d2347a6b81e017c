import { existsSync } from 'node:fs'
import { rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Config } from '../../config/index.js'
import { NothingAtTimeError } from '../../errors.js'
import { openIndex, type Index } from '../../index/index.js'
import type { ObjectHome } from '../../store/index.js'
import { makeDirsSync } from '../../util/make-dirs.js'
import { buildIndex } from './build-index.js'
import { publishAt, type HistoryEntry, type ManifestCache } from './history.js'
import { checkOwnPublishIn } from './own-publish-check.js'
import { prunePast, touchPast } from './past-prune.js'
import { readContext } from './read-context.js'
import type { FetchInit } from './segment-fetch.js'
import type { LastPublished } from '../state/index.js'
import type { SyncComponents } from '../sync-components.js'
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
  if (found === undefined) throw new NothingAtTimeError(`nothing was published at or before ${at.toISOString()} in the history from ${start}: see \`cidsync history\` for the times there are`)
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
 * Opens the index the newest publish at or before `at` held (docs/snapshot-format.md, "Restore"),
 * from the pointer of this device's namespace: nothing of this device's index changes. Exit 3
 * when nothing that early was published, or only a publish without content records.
 */
export async function openPastIndex (components: { readonly clients: ObjectHome, readonly store: Pick<SyncComponents['store'], 'manifestCache' | 'lastPublished'> }, config: Config, at: Date, options: { readonly passphrase: string | undefined, readonly signal?: AbortSignal }): Promise<PastIndex> {
  const { clients, store } = components
  // Bound to this namespace: a past publish of another namespace put behind the pointer would
  // otherwise have its files written into this one's folders.
  const init = readContext(config, { label: 'past', ...options })
  const pointer = await clients.pointers.current(config.namespace, config.network, { signal: options.signal })
  const built = await pastIndex(clients, pointer.snapshotCid, at, store.manifestCache, init, store.lastPublished())
  if (!built.records) throw new NothingAtTimeError(`nothing of cidsync-sqlite/2 (with content records) was published at or before ${at.toISOString()}: see \`cidsync history\` for the times there are`)
  const index = openIndex(built.indexPath, { check: false, readonly: true })
  return { index, cid: built.publish.cid, at: built.publish.at, close: async () => { index.close() } }
}
