import { describe, expect, it } from 'vitest'
import { SMALL_FILE_BYTES, type ContentRecord } from '../../../src/custody/index.js'
import { RecordTable } from '../../../src/sync/restore/record-table.js'

const P = (n: number): string => `bafkreipack${n}`
const sealed = (cid: string, size: number, objects: ContentRecord['objects'], keyId = 'k1'): ContentRecord => ({ cid, size, sealing: 'aes-256-gcm/1', keyId, keySalt: '', objects })

describe('the records of a restore, held in a few numbers each', () => {
  it('gives back each record as set, and orders large files, then each pack by offset, then plain files', () => {
    const records: Array<ContentRecord | undefined> = [
      sealed('c0', 10, [[P(2), 500, 42]]),
      { cid: 'c1', size: 5, sealing: 'none', keyId: '', keySalt: '', objects: [['c1', 0, 5]] },
      sealed('c2', 11, [[P(1), 900, 43]], 'k2'),
      undefined,
      sealed('c4', SMALL_FILE_BYTES * 3, [[P(3), 0, 100], [P(4), 0, 100]]),
      sealed('c5', 12, [[P(2), 100, 44]]),
      sealed('c6', 13, [[P(1), 10, 45]])
    ]
    const table = new RecordTable(records.length)
    for (const [i, record] of records.entries()) if (record !== undefined) table.set(i, record, record.cid, record.size)
    for (const [i, record] of records.entries()) expect(table.get(i, `c${i}`, record?.size ?? 0)).toEqual(record)
    expect([...table.order()]).toEqual([4, 5, 0, 6, 2, 1])
  })

  it('keeps a record of another file whole: the fetch refuses it by what it says', () => {
    const table = new RecordTable(1)
    const forged = sealed('other', 99, [[P(1), 0, 10]])
    table.set(0, forged, 'c0', 10)
    expect(table.get(0, 'c0', 10)).toEqual(forged)
  })
})
