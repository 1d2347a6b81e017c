import type { Logger } from 'pino'
import type { Index } from '../../index/index.js'
import type { Repository } from '../repository.js'
import { objectCidsOf } from '../../custody/index.js'
import { ListedObjects } from '../state/index.js'
import { readPruneList } from './list-pointer.js'

/** Records read at a time. */
const BATCH = 1000
/** Dropped records' files looked up at a time: each look-up reads this device's rows once. */
const COUNT_BATCH = 100_000
/** The most listing rows one check reads: past it, nothing is dropped for not being listed. */
const MOST_LISTED = 1_000_000

export interface PruneListCheck {
  readonly index: Index
  readonly logger: Logger
  readonly deviceId: string
  readonly repository: Repository
}

/**
 * After a publish moved the pointer: the prune list the service names now, against this device's
 * content records up to `upTo` (the publish's own last sequence number). A prune that checked the
 * pointer before it moved may be deleting what the list names; a record naming one is dropped, so
 * its file is stored again (a new upload, which that prune never deletes) and published anew.
 * The pointer moved before this read: a prune that did not see it announced its list first.
 * Answers how many files a live row of this device holds whose records were dropped: the files
 * to store again. A dropped record of a file deleted since is not counted.
 */
export async function checkPruneList (components: PruneListCheck, upTo: number, signal?: AbortSignal): Promise<number> {
  const { index, deviceId, repository, logger } = components
  await readPruneList(repository, logger, signal)
  const state = repository.store.pruneList
  const changed = state.fullCheckDue()
  // A new list: every record of this device is looked at again, and against the listing too. A
  // prune whose list this device never read (replaced since) may have deleted what it named, and
  // a pointer set back may have hidden its publish from the prune that now lists its objects.
  const from = changed ? 0 : state.checkedTo(deviceId)
  if ((state.size() === 0 && !changed) || from >= upTo) {
    state.noteChecked(deviceId, Math.max(from, upTo))
    return 0
  }
  const listed = changed ? new ListedObjects(repository.objects, repository.store.contentIndex, MOST_LISTED) : undefined
  const gone = async (object: string): Promise<boolean> => {
    if (state.names(object)) return true
    if (listed === undefined || !await listed.holds(object, signal)) return listed !== undefined && listed.complete
    return false
  }
  // Files whose records went, counted a batch at a time: a file's records go once, so none counts twice.
  let again = 0
  let dropped: string[] = []
  const count = (): void => {
    again += index.content.liveAmong(deviceId, dropped)
    dropped = []
  }
  // The rows it published (a file another device stored is named through that device's record),
  // and the records it made or took: the same sequence numbers count both.
  const sources = [
    (after: number) => index.content.storedSince(deviceId, after, BATCH),
    (after: number) => index.content.recordsSince(deviceId, after, BATCH)
  ]
  for (const since of sources) {
    for (let after = from; ;) {
      const rows = since(after)
      for (const row of rows) {
        if (row.seq > upTo) break
        after = row.seq
        if (await dropNamed(index, row.cid, gone)) dropped.push(row.cid)
        if (dropped.length >= COUNT_BATCH) count()
      }
      if (rows.length < BATCH || after >= upTo || (rows.at(-1)?.seq ?? 0) > upTo) break
    }
  }
  state.noteChecked(deviceId, upTo)
  if (listed?.cut === true) logger.warn({ listed: MOST_LISTED }, 'the store lists more uploads than one check reads: records naming objects past them were not checked against the listing, only against the prune list')
  // A record of a file no live row holds (deleted since) goes without a word: nothing stores it again.
  count()
  if (again > 0) logger.warn({ dropped: again, list: state.listCid() }, 'a prune is deleting objects this publish names: their files are stored again and published anew')
  return again
}

/** Drops every device's record of `cid` that names a listed object: one left would count it stored. Answers whether any went. */
async function dropNamed (index: Index, cid: string, gone: (object: string) => Promise<boolean>): Promise<boolean> {
  let dropped = false
  for (const record of index.content.lookup(cid)) {
    if (!await anyOf(objectCidsOf(record.objects), gone)) continue
    index.content.dropRecord(record.deviceId, record.cid)
    dropped = true
  }
  return dropped
}

async function anyOf (objects: readonly string[], test: (object: string) => Promise<boolean>): Promise<boolean> {
  for (const object of objects) if (await test(object)) return true
  return false
}
