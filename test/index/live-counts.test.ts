import { describe, it, expect } from 'vitest'
import { rename } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { checkSegment, openIndex, type EntryChange, type Index } from '../../src/index/index.js'
import { MIGRATIONS } from '../../src/index/migrations.js'
import { useTempDir } from '../helpers/temp-dir.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'
const C = 'cccccccc-0000-4000-8000-000000000000'

/** A small deterministic PRNG (mulberry32): the same run every time. */
function random (seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6D2B79F5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function randomChanges (next: () => number, n: number): EntryChange[] {
  return Array.from({ length: n }, () => {
    const path = `p${Math.floor(next() * 40)}`
    const folder = next() < 0.5 ? 'notes' : 'photos'
    return next() < 0.35
      ? { kind: 'delete' as const, folder, path }
      : { kind: 'upsert' as const, folder, path, size: Math.floor(next() * 100), mtimeMs: next(), cid: `cid-${next()}`, cidProfile: 'kubo-cidv1' }
  })
}

/** live_counts against a count of the rows, every device. */
function expectExact (index: Index): void {
  const counted = index.db.prepare('SELECT device_id AS d, COUNT(*) AS n FROM entries WHERE deleted = 0 GROUP BY device_id ORDER BY device_id').all() as Array<{ d: string, n: number }>
  const kept = index.db.prepare('SELECT device_id AS d, live AS n FROM live_counts WHERE live != 0 ORDER BY device_id').all()
  expect(kept).toEqual(counted)
  for (const device of [A, B, C]) expect(index.entries.liveCount(device)).toBe(counted.find(c => c.d === device)?.n ?? 0)
  expect(index.segments.liveEntries()).toBe(counted.reduce((sum, c) => sum + c.n, 0))
}

describe('live counts (live_counts, schema 5)', () => {
  it('stay exact through random applies, merges, segments applied on top or replacing, and a restore from a base file', async () => {
    const dir = await useTempDir()
    const next = random(9)
    const a = openIndex(join(dir, 'a.sqlite'))
    const b = openIndex(join(dir, 'b.sqlite'))
    a.entries.registerDevice(A, 'a')
    b.entries.registerDevice(B, 'b')
    b.entries.registerDevice(C, 'c')
    let cut = 0
    let segmentNo = 0
    const files: string[] = []
    for (let round = 0; round < 30; round++) {
      a.entries.apply(A, randomChanges(next, 1 + Math.floor(next() * 30)))
      b.entries.apply(B, randomChanges(next, 1 + Math.floor(next() * 30)))
      b.entries.apply(C, randomChanges(next, 1 + Math.floor(next() * 10)))
      expectExact(a)
      expectExact(b)
      // A's rows into B: a base first, then deltas put on top (or now and then a base replacing them).
      const to = a.segments.devices().find(d => d.deviceId === A)?.lastSeq as number
      const kind = cut === 0 || next() < 0.2 ? 'base' : 'delta'
      const path = join(dir, `seg-${segmentNo++}.sqlite`)
      const written = a.segments.writeSegment(path, { deviceId: A, kind, from: kind === 'base' ? 0 : cut, to }, { hostname: 'a', firstSeen: 1 })
      checkSegment(path, { deviceId: A, kind, from: kind === 'base' ? 0 : cut, to, entries: written.entries }, path)
      if (kind === 'base') files.length = 0
      files.push(path)
      cut = to
      b.segments.applyDevices([{ deviceId: A, hostname: 'a', firstSeen: 1, lastSeq: to, replace: kind === 'base', files: [path], chain: { deviceId: A, toSeq: to, segments: '[]' } }])
      expectExact(b)
      expect(b.entries.list({ deviceId: A, includeDeleted: true })).toEqual(a.entries.list({ deviceId: A, includeDeleted: true }))
      // B's and C's rows into A by a whole-index merge (the /1 path).
      if (round % 3 === 2) {
        const copy = join(dir, `copy-${round}.sqlite`)
        b.copyTo(copy)
        a.mergeFrom(copy, A)
        expectExact(a)
      }
    }
    // A restore: the base file becomes the index as it is, the deltas after it applied on top.
    const restored = join(dir, 'restored.sqlite')
    await rename(files[0] as string, restored)
    const r = openIndex(restored, { check: false })
    r.segments.applyDevices([{ deviceId: A, hostname: 'a', firstSeen: 1, lastSeq: cut, replace: false, files: files.slice(1), chain: { deviceId: A, toSeq: cut, segments: '[]' } }])
    expectExact(r)
    expect(r.entries.liveCount(A)).toBe(a.entries.liveCount(A))
    r.close()
    a.close()
    b.close()
  })

  it('are seeded by migration 5 on an index of schema 4, and refused when a segment carries a wrong one', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'old.sqlite')
    const old = new Database(path)
    for (const step of MIGRATIONS.slice(0, 4)) step(old)
    old.pragma('user_version = 4')
    old.prepare('INSERT INTO devices (device_id, first_seen, last_seq) VALUES (?, 1, 3)').run(A)
    const row = old.prepare(`INSERT INTO entries (device_id, folder, path, size, mtime_ms, cid, cid_profile, updated_at, deleted, seq) VALUES (?, 'f', ?, 1, 1, 'c', 'kubo-cidv1', 1, ?, ?)`)
    row.run(A, 'x', 0, 1)
    row.run(A, 'y', 1, 2)
    row.run(A, 'z', 0, 3)
    old.close()
    const index = openIndex(path)
    expect(index.entries.liveCount(A)).toBe(2)
    expectExact(index)
    const seg = join(dir, 'seg.sqlite')
    index.segments.writeSegment(seg, { deviceId: A, kind: 'base', from: 0, to: 3 }, { hostname: '', firstSeen: 1 })
    index.close()
    checkSegment(seg, { deviceId: A, kind: 'base', from: 0, to: 3, entries: 3 }, 'seg')
    const forged = new Database(seg)
    forged.prepare('UPDATE live_counts SET live = 3').run()
    forged.close()
    expect(() => checkSegment(seg, { deviceId: A, kind: 'base', from: 0, to: 3, entries: 3 }, 'seg')).toThrow(/live count of 3 where it holds 2/)
  })
})
