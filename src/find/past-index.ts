import { existsSync } from 'node:fs'
import { rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { NothingAtTimeError } from '../errors.js'
import type { ServiceClients } from '../remote/index.js'
import { buildIndex, checkOwnPublishIn, fetchV1Snapshot, publishAt, type FetchInit, type HistoryEntry, type LastPublished, type ManifestCache } from '../sync/index.js'
import { makeDirsSync } from '../util/make-dirs.js'
import { prunePast, touchPast } from './past-prune.js'

/** Where built past indexes are kept, in the state dir. */
export const PAST_DIR = 'past'

/**
 * The index as the newest publish at or before `at` saw it (history walked from `start`): built
 * once from that publish's segments into `past/<cid>.sqlite` and kept (a publish never changes),
 * with its own search cache beside it; the few most recently used are kept (`PAST_KEEP` in past-prune.ts). `own`: this device's last publish, when `start` is the
 * pointer of its own namespace: a history that lacks it is refused, as `restore --at` refuses it
 * (the service set the pointer back).
 */
export async function pastIndex (clients: ServiceClients, start: string, at: Date, cache: ManifestCache, init: FetchInit, own?: LastPublished): Promise<{ publish: HistoryEntry, indexPath: string, searchPath: string }> {
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
  return { publish: found.entry, indexPath, searchPath: join(dir, `${name}.search.sqlite`) }
}
