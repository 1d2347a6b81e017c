import { describe, expect, it, onTestFinished } from 'vitest'
import { join } from 'node:path'
import { openIndex } from '../../../src/index/index.js'
import { RecordsAhead, usableRecord } from '../../../src/sync/restore/targets.js'
import { useTempDir } from '../../helpers/temp-dir.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'
const OBJECT = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'

describe('the content records a restore looks up', () => {
  it('come a batch of rows at a time, past a batch\'s end, as one at a time gives them: every device\'s, newest first, none for a file never stored', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'index.sqlite'))
    onTestFinished(() => { index.close() })
    index.entries.registerDevice(A, 'a')
    const count = 2500
    index.entries.apply(A, Array.from({ length: count }, (_, i) => ({ kind: 'upsert' as const, folder: 'f', path: `file-${i}`, size: 26, mtimeMs: 1, cid: `cid-${i % 2200}`, cidProfile: 'kubo-cidv1' })))
    const record = (cid: string, keyId: string): { cid: string, size: number, sealing: 'aes-256-gcm/1', keyId: string, keySalt: string, objects: string } =>
      ({ cid, size: 26, sealing: 'aes-256-gcm/1', keyId, keySalt: '', objects: JSON.stringify([[OBJECT, 0, 26 + 16 + 12]]) })
    // Every file but each seventh stored by A; each fifth stored again later by B.
    index.content.record(A, 'a', Array.from({ length: 2200 }, (_, i) => i).filter(i => i % 7 !== 0).map(i => record(`cid-${i}`, '0123456789abcdef')), 1_000)
    index.content.record(B, 'b', Array.from({ length: 2200 }, (_, i) => i).filter(i => i % 5 === 0).map(i => record(`cid-${i}`, 'fedcba9876543210')), 2_000)
    const rows = Array.from({ length: count }, (_, i) => index.entries.get(A, 'f', `file-${i}`)).filter(r => r !== undefined)
    expect(rows.length).toBe(count)
    const ahead = new RecordsAhead((cids) => index.content.lookupMany(cids), rows)
    for (const [at, row] of rows.entries()) {
      const one = index.content.lookup(row.cid ?? '')
      expect(ahead.of(at)).toEqual(one)
      expect(usableRecord(index, row, ahead.of(at))).toEqual(usableRecord(index, row))
    }
    // cid-0: stored by B alone; cid-10: by both, B's newer first; cid-7: by neither.
    expect(ahead.of(0).map(r => r.deviceId)).toEqual([B])
    expect(ahead.of(7)).toEqual([])
    expect(index.content.lookupMany(['cid-10', 'cid-1', 'nothing']).get('cid-10')?.map(r => r.deviceId)).toEqual([B, A])
    expect(index.content.lookupMany(['nothing']).size).toBe(0)
  })
})
