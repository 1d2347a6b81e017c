import { describe, expect, it } from 'vitest'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { openIndex, type NewContentRecord } from '../../../src/index/index.js'
import { MAX_CONTENT_INDEX_RECORDS } from '../../../src/snapshot/index.js'
import { indexBatches } from '../../../src/sync/storing/index-batches.js'
import type { JoinedIndexBatch } from '../../../src/sync/storing/index-batch.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { syncDevice, type SyncDevice } from '../../helpers/sync-device.js'

const A = 'aaaaaaaa-0000-4000-8000-00000000c0de'
const KEY = '0123456789abcdef'

function record (cid: string, keyId = KEY): NewContentRecord {
  return { cid, size: 10, sealing: 'aes-256-gcm/1', keyId, keySalt: '', objects: JSON.stringify([['bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', 0, 26]]) }
}

/** A device whose index holds `count` records, one in seven under another key, written a thousand at a time. */
async function recorded (root: string, count: number): Promise<SyncDevice> {
  const a = await syncDevice(root, 'a', A, { namespace: 'batches' })
  for (let from = 0; from < count; from += 1000) {
    a.index.content.record(A, 'a', Array.from({ length: Math.min(1000, count - from) }, (_, i) => record(`cid-${from + i}`, (from + i) % 7 === 0 ? 'fedcba9876543210' : KEY)))
  }
  return a
}

/** Each batch: its texts as one string, how many, and the last sequence. */
async function all (batches: AsyncIterable<JoinedIndexBatch>): Promise<Array<{ texts: string, count: number, last: number }>> {
  const got = []
  for await (const batch of batches) got.push({ texts: new TextDecoder().decode(batch.records.bytes), count: batch.records.count, last: batch.last })
  return got
}

describe('a device\'s content records in index objects\' batches', () => {
  it('are the same read on a thread of their own as on this one, from any sequence on', async () => {
    const a = await recorded(await useTempDir(), 2 * MAX_CONTENT_INDEX_RECORDS + 1500)
    const init = { index: a.index, deviceId: A, keyId: KEY }
    const here = await all(indexBatches({ ...init, after: 0, onThread: false }))
    expect(here.length).toBeGreaterThanOrEqual(3)
    const texts = here.map(b => b.texts).join(',')
    expect(here.reduce((sum, b) => sum + b.count, 0)).toBe(2 * MAX_CONTENT_INDEX_RECORDS + 1500 - Math.ceil((2 * MAX_CONTENT_INDEX_RECORDS + 1500) / 7))
    // Valid JSON once bracketed, each record under the key asked for.
    expect((JSON.parse(`[${texts}]`) as Array<{ keyId: string }>).every(r => r.keyId === KEY)).toBe(true)
    expect(await all(indexBatches({ ...init, after: 0, onThread: true }))).toEqual(here)
    const from = here[0]?.last ?? 0
    expect(await all(indexBatches({ ...init, after: from, onThread: true }))).toEqual(here.slice(1))
    expect(await all(indexBatches({ ...init, after: here.at(-1)?.last ?? 0, onThread: true }))).toEqual([])
  })

  it('stop when the caller stops, and a record that is not JSON fails the read there too, naming it', async () => {
    const a = await recorded(await useTempDir(), 3 * MAX_CONTENT_INDEX_RECORDS)
    for await (const batch of indexBatches({ index: a.index, deviceId: A, keyId: KEY, after: 0, onThread: true })) {
      expect(batch.records.count).toBeGreaterThan(0)
      break
    }
    a.index.content.record(A, 'a', [{ ...record('cid-odd'), objects: "[['o1',0x10,1,],]" }])
    await expect(all(indexBatches({ index: a.index, deviceId: A, keyId: KEY, after: 0, onThread: true })))
      .rejects.toThrow(new SyntaxError('the content record of cid-odd holds objects that are not JSON'))
  })

  it('fail, never hang, when the thread cannot open the index', async () => {
    const root = await useTempDir()
    const a = await recorded(root, 10)
    const gone = openIndex(join(root, 'other.sqlite'))
    gone.close()
    await rm(join(root, 'other.sqlite'))
    const index = new Proxy(a.index, { get: (target, key) => key === 'path' ? join(root, 'other.sqlite') : Reflect.get(target, key) })
    await expect(all(indexBatches({ index, deviceId: A, keyId: KEY, after: 0, onThread: true }))).rejects.toThrow(/other\.sqlite/)
  })
})
