import { randomBytes } from 'node:crypto'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { sealContentIndex, type JoinedRecordTexts } from '../../snapshot/index.js'
import { SNAPSHOT_PROFILE } from '../read/index.js'
import type { Repository } from '../repository.js'

/** What the uploads listing names an index object: what it is, and nothing of the files in it. */
export const CONTENT_INDEX_NAME = 'cidsync-content-index.sealed'

/**
 * Seals `records` (each a record's JSON text, or those texts joined) as `deviceId`'s index object in
 * `spool` (0700), uploads it, and answers its CID.
 */
export async function putIndexObject (repository: Repository, deviceId: string, records: readonly string[] | JoinedRecordTexts, spool: string, signal?: AbortSignal): Promise<string> {
  const path = join(spool, `index-${randomBytes(8).toString('hex')}.sealed`)
  const place = { path, device: deviceId, stateDir: repository.config.stateDir, passphrase: repository.passphrase, signal }
  try {
    await sealContentIndex('bytes' in records ? { ...place, joinedTexts: records } : { ...place, recordTexts: records })
    return (await repository.objects.put(path, SNAPSHOT_PROFILE, { name: CONTENT_INDEX_NAME, signal })).cid
  } finally {
    await rm(path, { force: true })
  }
}
