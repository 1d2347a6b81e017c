import { describe, expect, it } from 'vitest'
import { SyncStore } from '../../src/sync/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

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
})
