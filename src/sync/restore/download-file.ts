import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { cidProfile, isCidProfileName } from '../../content/index.js'
import { ObjectCache, fetchFile, type ContentRecord } from '../../custody/index.js'
import { ContentIntegrityError, ContentNotFoundError, ContentNotStoredError, DownloadNoRoomError, IntegrityError } from '../../errors.js'
import type { Entry, Index } from '../../index/index.js'
import type { Repository } from '../repository.js'
import { readingKey } from '../../snapshot/index.js'
import { SNAPSHOT_PROFILE } from '../read/index.js'
import { usableRecord } from './get-files.js'
import { recordsFrom } from './newer-records.js'
import { firstUsable } from './targets.js'
import { spaceLeft } from '../../util/space-left.js'
import { makeDirs } from '../../util/make-dirs.js'
import { STATE_NAMES } from '../../config/index.js'

/** Left free on the state dir's disk after a download is staged: the index and snapshots keep working. */
export const DOWNLOAD_RESERVE_BYTES = 256 * 1024 ** 2
/** A large file is fetched a part at a time (each released once written); a pack is smaller. */
const LARGEST_OBJECT_BYTES = 64 * 1024 ** 2 + 64 * 1024

/**
 * Refuses a download that would fill the state dir's disk: the file and the one object being
 * opened must fit with {@link DOWNLOAD_RESERVE_BYTES} to spare, or the daemon's own writes start failing.
 */
export function checkDownloadRoom (dir: string, size: number): void {
  const left = spaceLeft(dir)
  if (left === undefined) return
  const needed = size + Math.min(size, LARGEST_OBJECT_BYTES) + DOWNLOAD_RESERVE_BYTES
  if (needed > left) {
    throw new DownloadNoRoomError(`staging this ${size}-byte file would leave the state dir's disk less than ${DOWNLOAD_RESERVE_BYTES / 1024 ** 2} MiB free (${left} bytes left): ` +
      'free space there, or bring it back with `cidsync get PATH --to DIR` onto a disk with room')
  }
}

/** A file fetched and verified into a private temp dir; `remove` takes it (and the dir) away. */
export interface DownloadedFile {
  readonly path: string
  readonly size: number
  remove: () => Promise<void>
}

export interface DownloadFileInit {
  /** The row to fetch, from this device's index or a past one (whose content records `index` holds). */
  readonly row: Entry
  /**
   * This device's index, when `index` is a past one: its newer records of the same content are
   * tried too. A past publish's record may name a pack a prune's repack replaced since.
   */
  readonly newer?: Index
  readonly signal?: AbortSignal
}

/**
 * Fetches one file's content the way `get` does (gateways, opened, hashed to the row's CID with
 * its profile) into a fresh 0700 dir under the state dir's `content-fetch/`, for the daemon to
 * send: the answer exists only once verified. A file whose content was never stored is a
 * {@link ContentNotStoredError}; damaged or forged content a {@link ContentIntegrityError} (or the
 * gateway's integrity error), with nothing left behind.
 */
export async function downloadFile (repository: Repository, index: Index, init: DownloadFileInit): Promise<DownloadedFile> {
  const { row } = init
  const { config, home: clients } = repository
  const shown = `${row.folder}/${row.path}`
  if (row.deleted || row.cid === null) throw new ContentNotStoredError(`${shown} has no content in this index (deleted, or not hashed yet)`)
  const records = candidateRecords(index, init.newer, row)
  const record = records[0]
  if (record === undefined) throw new ContentNotStoredError(`${shown}: ${usableRecord(index, row) as string}`)
  if (!isCidProfileName(row.cidProfile)) throw new ContentIntegrityError(`${shown} has CID profile ${JSON.stringify(row.cidProfile)}, which this cidsync does not know: upgrade cidsync`)
  const parent = join(config.stateDir, STATE_NAMES.contentFetch)
  await makeDirs(parent, 0o700)
  checkDownloadRoom(parent, row.size)
  // `download-` dirs never match the pid-named dirs `get` sweeps; the daemon clears its own at start.
  const dir = await mkdtemp(join(parent, 'download-'))
  const remove = async (): Promise<void> => { await rm(dir, { recursive: true, force: true }) }
  const objects = new ObjectCache(join(dir, 'objects'), async (cid, destination, options) => {
    await clients.objects.getFile(cid, options.profile ?? SNAPSHOT_PROFILE, destination, { ...options, signal: options.signal })
  })
  try {
    const path = join(dir, 'file')
    for (const [i, candidate] of records.entries()) {
      const key = candidate.sealing === 'none' ? undefined : readingKey(config.stateDir, { keyId: candidate.keyId, salt: candidate.keySalt }, repository.passphrase)
      try {
        await fetchFile({
          record: candidate,
          row: { cid: CID.parse(row.cid), size: row.size, mtimeMs: row.mtimeMs, profile: cidProfile(row.cidProfile) },
          target: path,
          snapshotKey: key,
          objects,
          signal: init.signal
        })
        break
      } catch (err) {
        // Objects gone (a pack a repack replaced and a prune deleted) or damaged: the next record, if any.
        const another = err instanceof ContentNotFoundError || err instanceof ContentIntegrityError || err instanceof IntegrityError
        if (!another || i === records.length - 1) throw err
        await rm(path, { force: true })
      }
    }
    await objects.clear()
    return { path, size: row.size, remove }
  } catch (err) {
    await objects.clear().catch(() => {})
    await remove()
    throw err
  }
}

/**
 * The row's usable content records, newest first: the index's, then `newer`'s naming other
 * objects. Each is parsed as a restore parses it; one that does not parse is left out.
 */
function candidateRecords (index: Index, newer: Index | undefined, row: Entry): ContentRecord[] {
  const cid = row.cid ?? ''
  const stored = recordsFrom(newer === undefined ? [index] : [index, newer])([cid]).get(cid) ?? []
  // Records naming the same objects fail alike: each is tried once.
  const seen = new Set<string>()
  return stored.flatMap((one) => {
    if (seen.has(one.objects)) return []
    seen.add(one.objects)
    const record = firstUsable([one])
    return typeof record === 'string' ? [] : [record]
  })
}

/** Removes what downloads of a daemon that was killed midway left (`content-fetch/download-*`). */
export async function removeStaleDownloads (stateDir: string): Promise<void> {
  const parent = join(stateDir, STATE_NAMES.contentFetch)
  for (const name of await readdir(parent).catch(() => [] as string[])) {
    if (name.startsWith('download-')) await rm(join(parent, name), { recursive: true, force: true })
  }
}
