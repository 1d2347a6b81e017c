import type { Index } from '../../index/index.js'
import { CONTENT_INDEX_SPLIT_BYTES, joinRecordTexts, MAX_CONTENT_INDEX_BYTES, MAX_CONTENT_INDEX_RECORDS, type JoinedRecordTexts } from '../../snapshot/index.js'

/** The records one index object holds, each as its JSON text, and the last sequence number they cover. */
export interface IndexBatch {
  readonly records: string[]
  readonly last: number
}

/** An {@link IndexBatch} with its texts joined by commas as UTF-8: one buffer, handed between threads without a copy. */
export interface JoinedIndexBatch {
  readonly records: JoinedRecordTexts
  readonly last: number
}

/** The batch's texts joined, in a buffer of their own. */
export function joinBatch (batch: IndexBatch): JoinedIndexBatch {
  return { records: joinRecordTexts(batch.records), last: batch.last }
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
