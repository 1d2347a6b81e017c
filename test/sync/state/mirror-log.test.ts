import { describe, expect, it, onTestFinished } from 'vitest'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { CHUNK_BYTES, sealedSize } from '../../../src/custody/index.js'
import { openIndex, type NewContentRecord } from '../../../src/index/index.js'
import { logIndexContent, SyncStore } from '../../../src/sync/index.js'
import { SyncState } from '../../../src/sync/state/database.js'
import { useTempDir } from '../../helpers/temp-dir.js'

const A = 'bafkreia'
const cid = (n: number): string => `${A}${String(n).padStart(52, 'a')}`

describe('the replication log', () => {
  it('logs each object once and a publish as its objects then its pointer; each mirror reads from its own cursor, kept across reopening', async () => {
    const dir = await useTempDir()
    let store = new SyncStore(dir)
    const log = store.mirrorLog
    log.logObjects([{ cid: cid(1), profile: 'kubo-cidv1' }, { cid: cid(1), profile: 'kubo-cidv1' }], 1000)
    log.logPublish(cid(9), [cid(1), cid(2)], 'kubo-cidv1', 2000)
    // The same manifest again (a publish resumed): no second pointer move, no object twice.
    log.logPublish(cid(9), [cid(1), cid(2)], 'kubo-cidv1', 3000)
    expect(log.after(0, 100).map(r => [r.kind, r.cid])).toEqual([['object', cid(1)], ['object', cid(2)], ['object', cid(9)], ['pointer', cid(9)]])
    expect(log.behind('nas')).toEqual({ objects: 3, pointers: 1, oldestAt: 1000 })
    log.advance('nas', 2)
    expect(log.behind('nas')).toEqual({ objects: 1, pointers: 1, oldestAt: 2000 })
    expect(log.behind('usb')).toMatchObject({ objects: 3, pointers: 1 })
    log.notePublished('nas', cid(9), 4, new Date('2026-11-24T10:00:00Z'))
    log.logPublish(cid(10), [cid(1), cid(3)], 'kubo-cidv1', 5000)
    expect(log.pointerAfter(4)).toBe(true)
    expect(log.pointerAfter(log.lastSeq())).toBe(false)
    // A cursor never goes back.
    log.advance('nas', 1)
    store.close()
    store = new SyncStore(dir)
    expect(store.mirrorLog.mirror('nas')).toMatchObject({ cursor: 4, published: { cid: cid(9), at: '2026-11-24T10:00:00.000Z' } })
    expect(store.mirrorLog.behind('nas')).toEqual({ objects: 2, pointers: 1, oldestAt: 5000 })
    store.mirrorLog.noteDrill('nas', '{"restorable":false}', null)
    store.mirrorLog.noteDrill('nas', '{"restorable":true}', '2026-11-24T11:00:00Z')
    store.mirrorLog.noteDrill('nas', '{"restorable":false}', null)
    expect(store.mirrorLog.mirror('nas')).toMatchObject({ drill: '{"restorable":false}', drillSuccessAt: '2026-11-24T11:00:00Z' })
    store.close()
  })

  it('logs every content object the records of the index name, whichever device stored it, once: each device read after its last sequence number, the last pointer repeated after new content', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'index.sqlite'))
    const store = new SyncStore(dir)
    onTestFinished(() => { store.close(); index.close() })
    const log = store.mirrorLog
    // Records as a storing pass writes them: real CIDs, ranges adding up to the sealed size, a chunk a part at least.
    const reals = new Map<number, string>()
    for (const n of [1, 2, 3, 4, 5, 101, 102, 103, 104, 105]) reals.set(n, CID.createV1(raw.code, await sha256.digest(new Uint8Array([n]))).toString())
    const real = (n: number): string => reals.get(n) as string
    const record = (file: number, objects: number[], sealing = 'aes-256-gcm/1'): NewContentRecord => sealing === 'none'
      ? { cid: real(100 + file), size: 5, sealing, keyId: '', keySalt: '', objects: JSON.stringify([[real(100 + file), 0, 5]]) }
      : objects.length === 1
        ? { cid: real(100 + file), size: 10, sealing, keyId: '0123456789abcdef', keySalt: '', objects: JSON.stringify([[real(objects[0] as number), 0, sealedSize(10)]]) }
        : { cid: real(100 + file), size: objects.length * CHUNK_BYTES, sealing, keyId: '0123456789abcdef', keySalt: '', objects: JSON.stringify(objects.map(o => [real(o), 0, sealedSize(CHUNK_BYTES)])) }
    // Stored before the log was kept, and by another device that has no mirror.
    index.content.record('device-a', 'a', [record(1, [1, 2]), record(2, [2])])
    index.content.record('device-b', 'b', [record(3, [3]), record(4, [4], 'none')])
    log.logPublish(cid(9), [cid(8)], 'kubo-cidv1', 1000)
    expect(logIndexContent(index, log)).toBe(4)
    const rows = log.after(0, 100).map(r => [r.kind, r.cid, r.profile])
    expect(rows.slice(3)).toEqual([...[1, 2, 3].map(n => ['object', real(n), 'kubo-cidv1']), ['object', real(104), 'kubo-cidv1'], ['pointer', cid(9), 'kubo-cidv1']])
    // A mirror holding the publish already waits for the content, and for one publish only.
    log.notePublished('nas', cid(9), 3)
    expect(log.behind('nas')).toMatchObject({ objects: 4, pointers: 0 })
    expect(log.behind('usb')).toMatchObject({ objects: 6, pointers: 1 })
    // Nothing new: nothing logged, no pointer repeated.
    const last = log.lastSeq()
    expect(logIndexContent(index, log)).toBe(0)
    expect(log.lastSeq()).toBe(last)
    // A merge brings one more record of device b: only its new object is logged.
    index.content.record('device-b', 'b', [record(5, [3, 5])])
    expect(logIndexContent(index, log)).toBe(1)
    expect(log.after(last, 100).map(r => [r.kind, r.cid])).toEqual([['object', real(5)], ['pointer', cid(9)]])
    expect(log.contentSeen()).toEqual({ 'device-a': 2, 'device-b': 3 })
    // This device's own records are read once (it logs what it stores as it uploads): then left alone.
    expect(logIndexContent(index, log, 'device-a')).toBe(0)
    expect(log.contentSeen()).toMatchObject({ 'device-a#read': 1 })
    index.content.record('device-a', 'a', [record(5, [4, 5, 1])])
    const before = log.lastSeq()
    expect(logIndexContent(index, log, 'device-a')).toBe(0)
    expect(log.lastSeq()).toBe(before)
  })
})

const STORED_A = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const STORED_B = 'bafkreiatbbbusdhltpnil5gxasppf6gpx6ph7e35pcqrekjcjkf5ycc2ga'
const STORED_C = 'bafkreic4plsutiojzsr6i2txvkzakt236sc46pdyz4455jaweapfjrustq'

/**
 * A daemon's storing logs each object it stores while a command's prune writes the same file. A
 * deferred transaction that reads first, then writes after the other commit, gets SQLITE_BUSY at
 * once, without the busy wait. Here the other process is a second SyncState on the same state dir.
 */
describe('the mirror log beside another writer of sync.sqlite', () => {
  it('logs the objects, instead of failing with "database is locked"', async () => {
    const dir = await useTempDir()
    const daemon = new SyncState(dir)
    const prune = new SyncState(dir)
    onTestFinished(() => { daemon.close(); prune.close() })
    // Logged once already: the next batch only reads it.
    daemon.mirrorLog.logObjects([{ cid: STORED_A, profile: 'kubo-cidv1' }])

    // The batch, as storing hands it; the prune commits while the batch is between its objects.
    const batch = [{ cid: STORED_A, profile: 'kubo-cidv1' }, { cid: STORED_B, profile: 'kubo-cidv1' }]
    let committed = false
    const withCommit = {
      * [Symbol.iterator] () {
        for (const [i, o] of batch.entries()) {
          if (i === 1) {
            committed = true
            try {
              prune.mirrorLog.noteDeleting([STORED_C])
            } catch (err) {
              // The batch holds the write lock already: the prune's process would wait for it.
              if (!String((err as { code?: string }).code).startsWith('SQLITE_BUSY')) throw err
            }
          }
          yield o
        }
      }
    } as unknown as ReadonlyArray<{ cid: string, profile: string }>
    daemon.mirrorLog.logObjects(withCommit)
    expect(committed).toBe(true)
    expect(daemon.mirrorLog.after(0, 10).map(r => r.cid)).toEqual([STORED_A, STORED_B])
  })
})
