import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { failpoint } from '../../util/failpoint.js'
import { CID } from 'multiformats/cid'
import { cidProfile, isCidProfileName } from '../../content/index.js'
import { ObjectCache, fetchFile, type ContentRecord } from '../../custody/index.js'
import { ContentIntegrityError } from '../../errors.js'
import { openIndex, walkStoredFiles, type StoredFile } from '../../index/index.js'
import type { ObjectHome } from '../../store/index.js'
import { readingKey } from '../../snapshot/index.js'
import { missingKey, SNAPSHOT_PROFILE } from '../read/index.js'
import { makeDirs } from '../../util/make-dirs.js'
import { checkEveryFile, fileFailure, notRestorable, recordOf, type FailedFiles } from './check-every-file.js'
import { STATE_NAMES } from '../../config/index.js'

/** Stored files a drill brings back (all of them with `verify --content`). */
export const CONTENT_SAMPLE = 8
/**
 * What a sample fetches at most, and the largest file it picks: a daily drill must not pull a
 * 10 GiB file down each time (`verify --content` checks every file, whatever its size).
 */
export const CONTENT_SAMPLE_BYTES = 256 * 1024 * 1024
/** Rows of another size than their record a sample checks at most: each fails before any fetch. */
const MAX_MISMATCHES = 100

export interface ContentCheckInit {
  readonly stateDir: string
  readonly passphrase?: string
  readonly signal?: AbortSignal
  /** Every stored file, not a sample. */
  readonly all?: boolean
}

/** What a drill found of stored files: how many of how many were brought back, and the first that failed. */
export interface ContentCheck {
  /** Contents (one per CID) brought back. */
  readonly checked: number
  /** Contents stored: a file at several paths is one. */
  readonly stored: number
  /** The paths whose content is stored: what `restore --files` counts. */
  readonly paths: number
  /** The object that failed, the file (`folder/path`) it held, and why: the first in the walk. */
  readonly failed: { readonly cid: string, readonly message: string, readonly file: string } | null
  /** With every file walked: those that do not come back, named up to a bound and counted (see FailedFiles). */
  readonly failedFiles?: FailedFiles
}

/**
 * Brings stored files back as a restore on a new device would (docs/content-format.md,
 * "Restore"): the records of the index a drill rebuilt at `drillIndex`, each file's objects
 * fetched through the gateways and verified, opened and hashed to the row's CID, into a temp dir
 * aside that is removed after. A file that does not come back ends the check naming it and the
 * object; a network failure or a missing key throws (the drill could not run).
 */
export async function checkStoredContent (clients: ObjectHome, drillIndex: string, init: ContentCheckInit): Promise<ContentCheck> {
  const index = openIndex(drillIndex)
  const dir = join(init.stateDir, STATE_NAMES.snapshots, `verify-content-${process.pid}`)
  let fetching = ''
  const objects = new ObjectCache(join(dir, 'objects'), async (cid, destination, options) => {
    fetching = cid
    // Scratch read here and removed (as get-files' objects): an fsync each protected nothing.
    await clients.objects.getFile(cid, options.profile ?? SNAPSHOT_PROFILE, destination, { ...options, signal: options.signal, durable: false })
  })
  const keys = new Map<string, Buffer>()
  let checked = 0
  let fetched = 0
  try {
    const stored = index.content.storedCount()
    const paths = stored === 0 ? 0 : index.content.restorable().stored
    if (stored > 0) await makeDirs(dir, 0o700)
    failpoint('verify:content')
    let previous: ContentRecord | undefined
    // `counted`: false for a second row of a content already counted (checked, not counted twice).
    const one = async (file: StoredFile, counted = true): Promise<ContentCheck['failed']> => {
      fetching = ''
      let record: ContentRecord | undefined
      try {
        record = recordOf(index, file.cid)
        // Objects no later file of this walk reads (the files of a pack come together) are let go.
        for (const [object] of previous?.objects ?? []) if (!record.objects.some(([o]) => o === object)) await objects.release(object)
        previous = record
        if (!isCidProfileName(file.cidProfile)) throw new ContentIntegrityError(`its CID profile ${JSON.stringify(file.cidProfile)} is not one this cidsync knows`)
        let key: Buffer | undefined
        if (record.sealing !== 'none') {
          key = keys.get(record.keyId) ?? readingKey(init.stateDir, { keyId: record.keyId, salt: record.keySalt }, init.passphrase)
          keys.set(record.keyId, key)
        }
        const target = join(dir, `file-${fetched++}`)
        await fetchFile({ record, row: { cid: CID.parse(file.cid), size: file.size, mtimeMs: file.mtimeMs, profile: cidProfile(file.cidProfile) }, target, snapshotKey: key, objects, signal: init.signal, durable: false })
        await rm(target, { force: true })
        if (counted) checked++
        return null
      } catch (err) {
        if (init.signal?.aborted === true) throw err
        const noKey = missingKey(err)
        if (noKey !== undefined) throw noKey
        if (!notRestorable(err)) throw err
        const object = fetching !== '' ? fetching : record?.objects[0]?.[0] ?? file.cid
        return fileFailure(file, object, err)
      }
    }
    if (init.all !== true) {
      // Rows of another size than their content's record: a restore refuses each as forged, with
      // nothing fetched. The sample checks them before the files it picks.
      for (const forged of index.content.sizeMismatches(MAX_MISMATCHES)) {
        const failed = await one(forged, false)
        if (failed !== null) return { checked, stored, paths, failed }
      }
      let budget = CONTENT_SAMPLE_BYTES
      for (const file of index.content.sampleStored(CONTENT_SAMPLE * 4, CONTENT_SAMPLE_BYTES)) {
        if (checked >= CONTENT_SAMPLE) break
        if (file.size > budget) continue
        budget -= file.size
        const failed = await one(file)
        if (failed !== null) return { checked, stored, paths, failed }
      }
      return { checked, stored, paths, failed: null }
    }
    // Every file: as a restore brings them back, a pack read once for all its files, each opened
    // and hashed on the sealing threads; nothing written but the plain ones, one at a time.
    const every = await checkEveryFile(clients, index, walkStoredFiles(drillIndex), { ...init, plain: one })
    return { checked: every.checked, stored, paths, failed: every.failed.files[0] ?? null, failedFiles: every.failed }
  } finally {
    index.close()
    await objects.clear()
    await rm(dir, { recursive: true, force: true })
  }
}
