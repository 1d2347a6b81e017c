import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { useTempDir } from '../helpers/temp-dir.js'
import { syncDevice, writeRows } from '../helpers/sync-device.js'
import { checkSegment, indexPath, type NewContentRecord } from '../../src/index/index.js'

const A = 'aaaaaaaa-0000-4000-8000-00000000c0de'
const B = 'bbbbbbbb-0000-4000-8000-00000000c0de'

function record (cid: string): NewContentRecord {
  return { cid, size: 10, sealing: 'aes-256-gcm/1', keyId: '0123456789abcdef', keySalt: '', objects: JSON.stringify([['bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy', 0, 26]]) }
}

const indexes = (path: string): string[] => {
  const db = new Database(path, { readonly: true })
  try { return db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all() as string[] } finally { db.close() }
}

describe('content_by_seq stays out of segments', () => {
  it('a base (alone, and beside another device) and a delta written after it exists pass the segment check', async () => {
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'by-seq' })
    writeRows(a, 'one.md', 'two.md')
    a.index.content.record(A, 'a', [record('cid-one.md')])
    a.index.content.recordsSince(A, 0, 10)
    expect(indexes(indexPath(a.config.stateDir))).toContain('content_by_seq')
    const device = { hostname: 'a', firstSeen: 1 }
    const last = a.index.segments.devices().find(d => d.deviceId === A)?.lastSeq ?? 0
    a.index.segments.writeSegment(join(root, 'base'), { deviceId: A, kind: 'base', from: 0, to: last }, device)
    a.index.segments.writeSegment(join(root, 'delta'), { deviceId: A, kind: 'delta', from: last - 1, to: last }, device)
    for (const name of ['base', 'delta']) expect(indexes(join(root, name))).not.toContain('content_by_seq')
    checkSegment(join(root, 'base'), { deviceId: A, kind: 'base', from: 0, to: last, entries: 2 }, 'base')
    checkSegment(join(root, 'delta'), { deviceId: A, kind: 'delta', from: last - 1, to: last, entries: 0 }, 'delta')
    a.index.entries.registerDevice(B, 'b')
    a.index.entries.apply(B, [{ kind: 'upsert', folder: 'notes', path: 'b.md', size: 3, mtimeMs: 1, cid: 'cid-b', cidProfile: 'kubo-cidv1' }])
    a.index.segments.writeSegment(join(root, 'base2'), { deviceId: A, kind: 'base', from: 0, to: last }, device)
    expect(indexes(join(root, 'base2'))).not.toContain('content_by_seq')
  })
})

describe('record texts by sequence', () => {
  it('are the JSON of the records recordsSince reads, keys in order, and cut where it cuts', async () => {
    const root = await useTempDir()
    const a = await syncDevice(root, 'a', A, { namespace: 'texts' })
    const plain = { ...record('cid-plain'), sealing: 'none', keySalt: 'salt "quoted" \\ é', objects: JSON.stringify([['x', 0, 1], ['y', 5, null]]) }
    a.index.content.record(A, 'a', [record('cid-one'), plain, record('cid-three')])
    const rows = a.index.content.recordsSince(A, 0, 10)
    const texts = a.index.content.recordTextsSince(A, 0, 10)
    expect(texts.map(t => t.text)).toEqual(rows.map(r => JSON.stringify({
      cid: r.cid, size: r.size, sealing: r.sealing, keyId: r.keyId, keySalt: r.keySalt, objects: JSON.parse(r.objects), seq: r.seq, storedAt: r.storedAt
    })))
    expect(texts.map(t => [t.seq, t.keyId])).toEqual(rows.map(r => [r.seq, r.keyId]))
    const [first, second, third] = rows.map(r => r.seq)
    expect(a.index.content.recordTextsSince(A, first ?? 0, 1).map(t => t.seq)).toEqual([second])
    expect(a.index.content.recordTextsSince(A, third ?? 0, 10)).toEqual([])
  })

  it('refuse objects JSON.parse would refuse, JSON5 included, naming the record', async () => {
    const root = await useTempDir()
    for (const [i, objects] of ["[['o1',0x10,1,],]", '[["o2",NaN,1]]', 'not json'].entries()) {
      const a = await syncDevice(root, `a${i}`, A, { namespace: `texts-odd-${i}` })
      a.index.content.record(A, 'a', [record('cid-fine'), { ...record('cid-odd'), objects }])
      expect(() => a.index.content.recordTextsSince(A, 0, 10)).toThrow(/content record of cid-odd holds objects that are not JSON/)
    }
  })
})
