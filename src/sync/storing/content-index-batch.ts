import { randomBytes } from 'node:crypto'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Index } from '../../index/index.js'
import { CONTENT_INDEX_SPLIT_BYTES, MAX_CONTENT_INDEX_BYTES, MAX_CONTENT_INDEX_RECORDS, sealContentIndex } from '../../snapshot/index.js'
import { SNAPSHOT_PROFILE } from '../read/index.js'
import type { Repository } from '../repository.js'

/** What the uploads listing names an index object: what it is, and nothing of the files in it. */
export const CONTENT_INDEX_NAME = 'cidsync-content-index.sealed'

/** The records one index object holds, each as its JSON text, and the last sequence number they cover. */
export interface IndexBatch {
  readonly records: string[]
  readonly last: number
}

/**
 * `deviceId`'s records after sequence `after`, as one index object holds them: at most
 * {@link MAX_CONTENT_INDEX_RECORDS} and about {@link CONTENT_INDEX_SPLIT_BYTES}. Only records under
 * `keyId` go in; `last` still passes the others. Undefined once no record is left.
 */
export function nextIndexBatch (index: Index, deviceId: string, keyId: string, after: number, tooLarge: (cid: string, bytes: number) => void): IndexBatch | undefined {
  const rows = index.content.recordTextsSince(deviceId, after, MAX_CONTENT_INDEX_RECORDS)
  if (rows.length === 0) return undefined
  const records: string[] = []
  let bytes = 0
  let last = after
  for (const row of rows) {
    const length = row.text.length + 1
    if (records.length > 0 && bytes + length > CONTENT_INDEX_SPLIT_BYTES) break
    last = row.seq
    if (row.keyId !== keyId) continue
    if (length > MAX_CONTENT_INDEX_BYTES / 2) {
      tooLarge(row.cid, length)
      continue
    }
    records.push(row.text)
    bytes += length
  }
  return { records, last }
}

/** Seals `records` (each a record's JSON text) as `deviceId`'s index object in `spool` (0700), uploads it, and answers its CID. */
export async function putIndexObject (repository: Repository, deviceId: string, records: readonly string[], spool: string, signal?: AbortSignal): Promise<string> {
  const path = join(spool, `index-${randomBytes(8).toString('hex')}.sealed`)
  try {
    await sealContentIndex({ path, device: deviceId, recordTexts: records, stateDir: repository.config.stateDir, passphrase: repository.passphrase, signal })
    return (await repository.objects.put(path, SNAPSHOT_PROFILE, { name: CONTENT_INDEX_NAME, signal })).cid
  } finally {
    await rm(path, { force: true })
  }
}
