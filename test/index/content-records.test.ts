import { describe, expect, it } from 'vitest'
import { serviceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { syncDevice, writeRows } from '../helpers/sync-device.js'
import { handClock } from '../helpers/clock.js'
import { pub, readIndex, restoreInto, restorer } from '../sync/v2-helpers.js'
import { importKey, exportKey } from '../../src/snapshot/index.js'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { checkSegment, CONTENT_SCHEMA_VERSION, openIndex, type NewContentRecord } from '../../src/index/index.js'

const A = 'aaaaaaaa-0000-4000-8000-00000000c0de'
const B = 'bbbbbbbb-0000-4000-8000-00000000c0de'
const INCREMENTAL = 'deal = false\ncompact_after_deltas = 100\ncompact_fraction = 100\n'

function record (cid: string, object: string): NewContentRecord {
  return { cid, size: 10, sealing: 'aes-256-gcm/1', keyId: '0123456789abcdef', keySalt: '', objects: JSON.stringify([[object, 0, 26]]) }
}

const where = (cid: string) => (index: Parameters<Parameters<typeof readIndex>[1]>[0]) => index.content.lookup(cid).map(r => [r.deviceId, JSON.parse(r.objects)[0][0]])

describe('content records: rows of their device, carried in its segments', () => {
  it('take a sequence number, so a publish carries them; another device merges them; a restore, and --at, have exactly those of that publish', async () => {
    const { clients } = await serviceUnderTest()
    const root = await useTempDir()
    const NS = 'content-records'
    const a = await syncDevice(root, 'a', A, { namespace: NS, snapshot: INCREMENTAL })
    const b = await syncDevice(root, 'b', B, { namespace: NS, snapshot: INCREMENTAL })
    importKey(b.config.stateDir, exportKey(a.config.stateDir), true)
    writeRows(a, 'one.md')
    // The two publishes an hour apart, on a clock the test moves.
    const clock = handClock()
    const first = await pub(a, clients, a.config, clock)
    clock.move(3_600_000)
    const before = a.index.segments.devices().find(d => d.deviceId === A)?.lastSeq ?? 0
    a.index.content.record(A, 'a', [record('cid-one.md', 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy')])
    expect(a.index.segments.devices().find(d => d.deviceId === A)?.lastSeq).toBe(before + 1)
    expect(a.index.content.has('cid-one.md', '0123456789abcdef')).toBe(true)
    // Only the record changed: the publish is not skipped, and its delta holds the record.
    const second = await pub(a, clients, a.config, clock)
    expect(second.cid).not.toBe(first.cid)

    writeRows(b, 'other.md')
    await pub(b, clients)
    expect(b.index.content.lookup('cid-one.md').map(r => r.deviceId)).toEqual([A])
    expect(b.index.content.has('cid-one.md', '0123456789abcdef')).toBe(true)

    const r = await restorer(root, 'r', a, NS)
    await restoreInto(clients, r, NS)
    expect(readIndex(r.config, where('cid-one.md'))).toEqual([[A, 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy']])
    await restoreInto(clients, r, NS, { cid: first.cid })
    expect(readIndex(r.config, where('cid-one.md'))).toEqual([])
  })

  it('a segment without content records is written at the schema before them, which an older cidsync reads', async () => {
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'old-readers' })
    writeRows(a, 'one.md', 'two.md')
    const versionOf = (path: string): number => {
      const db = new Database(path, { readonly: true })
      try { return db.pragma('user_version', { simple: true }) as number } finally { db.close() }
    }
    const device = { hostname: 'a', firstSeen: 1 }
    a.index.segments.writeSegment(join(root, 'plain-base'), { deviceId: A, kind: 'base', from: 0, to: 2 }, device)
    expect(versionOf(join(root, 'plain-base'))).toBe(CONTENT_SCHEMA_VERSION - 1)
    a.index.content.record(A, 'a', [record('cid-one.md', 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy')])
    a.index.segments.writeSegment(join(root, 'base'), { deviceId: A, kind: 'base', from: 0, to: 3 }, device)
    a.index.segments.writeSegment(join(root, 'delta'), { deviceId: A, kind: 'delta', from: 2, to: 3 }, device)
    a.index.segments.writeSegment(join(root, 'old-delta'), { deviceId: A, kind: 'delta', from: 0, to: 2 }, device)
    expect([versionOf(join(root, 'base')), versionOf(join(root, 'delta')), versionOf(join(root, 'old-delta'))]).toEqual([CONTENT_SCHEMA_VERSION, CONTENT_SCHEMA_VERSION, CONTENT_SCHEMA_VERSION - 1])
    checkSegment(join(root, 'delta'), { deviceId: A, kind: 'delta', from: 2, to: 3, entries: 0 }, 'delta')
    // A record another device's segment carries, or one outside the range, is refused.
    expect(() => { checkSegment(join(root, 'delta'), { deviceId: A, kind: 'delta', from: 3, to: 3, entries: 0 }, 'shifted') }).toThrow(/content record at sequence 3/)
  })

  it('count the files a restored index lists and those with stored content in SQL, one per folder/path as restore --files picks them', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'index.sqlite'))
    const row = (path: string, cid: string) => ({ kind: 'upsert' as const, folder: 'notes', path, size: 3, mtimeMs: 1, cid, cidProfile: 'kubo-cidv1' })
    const stored = (cid: string): NewContentRecord => ({ cid, size: 3, sealing: 'none', keyId: '', keySalt: '', objects: JSON.stringify([[cid, 0, 3]]) })
    try {
      expect(index.content.restorable()).toEqual({ files: 0, stored: 0 })
      index.entries.registerDevice(A, 'a')
      index.entries.apply(A, [row('one.md', 'cid-1'), row('two.md', 'cid-2'), row('gone.md', 'cid-3')])
      index.entries.apply(A, [{ kind: 'delete', folder: 'notes', path: 'gone.md' }])
      // One device, nothing stored: the live count alone.
      expect(index.content.restorable()).toEqual({ files: 2, stored: 0 })
      index.content.record(A, 'a', [stored('cid-1')])
      expect(index.content.restorable()).toEqual({ files: 2, stored: 1 })
      // Another device with the same path (one file to bring back) and a path of its own whose content is stored.
      index.entries.registerDevice(B, 'b')
      index.entries.apply(B, [row('one.md', 'cid-1b'), row('three.md', 'cid-3b')])
      index.content.record(B, 'b', [stored('cid-3b')])
      expect(index.content.restorable()).toEqual({ files: 3, stored: 2 })
    } finally {
      index.close()
    }
  })

  it('say which of some objects a record names, whole CIDs only, not a CID that one contains', async () => {
    const root = await useTempDir()
    const index = openIndex(join(root, 'index.sqlite'))
    try {
      const named = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
      index.content.record(A, 'a', [record('cid-one.md', named)])
      expect([...index.content.namedObjects([named, named.slice(0, -1), 'bafkreiother', `${named}x`])]).toEqual([named])
      expect(index.content.namedObjects([]).size).toBe(0)
    } finally {
      index.close()
    }
  })
})
