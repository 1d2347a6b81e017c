import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { checkSegment, checkSegmentAsync, openIndex } from '../../src/index/index.js'
import { readFile, writeFile } from 'node:fs/promises'
import { SnapshotIntegrityError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'
const file = (path: string, cid = `cid-${path}`) => ({ kind: 'upsert' as const, folder: 'notes', path, size: 10, mtimeMs: 1.5, cid, cidProfile: 'kubo-cidv1' })
const live = (index: ReturnType<typeof openIndex>, device: string) => index.entries.list({ deviceId: device }).map(e => [e.path, e.cid, e.seq])

/** A base segment of device A's 300 files, written in `dir`; answers its path. */
function baseOf300 (dir: string): string {
  const source = openIndex(join(dir, 'a.sqlite'))
  source.entries.registerDevice(A, 'laptop')
  source.entries.apply(A, Array.from({ length: 300 }, (_, i) => file(`f${i}`)))
  const path = join(dir, 'seg.sqlite')
  source.segments.writeSegment(path, { deviceId: A, kind: 'base', from: 0, to: 300 }, { hostname: 'laptop', firstSeen: 1 })
  source.close()
  return path
}

describe('segments of the index', () => {
  it('cuts a base (every row at its sequence) and a delta (every write in the range, tombstones too) that rebuild the device elsewhere', async () => {
    const dir = await useTempDir()
    const source = openIndex(join(dir, 'a.sqlite'))
    source.entries.registerDevice(A, 'laptop')
    source.entries.apply(A, [file('a'), file('b'), file('c')])
    source.entries.apply(A, [{ kind: 'delete', folder: 'notes', path: 'b' }])
    const base = source.segments.writeSegment(join(dir, 'base.sqlite'), { deviceId: A, kind: 'base', from: 0, to: 4 }, { hostname: 'laptop', firstSeen: 1 })
    expect(base.entries).toBe(3)
    source.entries.apply(A, [file('a', 'cid-a2'), { kind: 'delete', folder: 'notes', path: 'c' }, file('d')])
    const delta = source.segments.writeSegment(join(dir, 'delta.sqlite'), { deviceId: A, kind: 'delta', from: 4, to: 7 }, { hostname: 'laptop', firstSeen: 1 })
    expect(delta.entries).toBe(3)
    checkSegment(join(dir, 'base.sqlite'), { deviceId: A, kind: 'base', from: 0, to: 4, entries: 3 }, 'base')
    checkSegment(join(dir, 'delta.sqlite'), { deviceId: A, kind: 'delta', from: 4, to: 7, entries: 3 }, 'delta')

    const target = openIndex(join(dir, 'b.sqlite'))
    target.entries.registerDevice(B, 'desktop')
    target.entries.apply(B, [file('mine')])
    target.segments.applyDevices([{ deviceId: A, hostname: 'laptop', firstSeen: 1, lastSeq: 7, replace: true, files: [join(dir, 'base.sqlite'), join(dir, 'delta.sqlite')], chain: { deviceId: A, toSeq: 7, segments: '[]' } }])
    expect(live(target, A)).toEqual(live(source, A))
    expect(live(target, B)).toEqual([['mine', 'cid-mine', 1]])
    expect(target.segments.devices().find(d => d.deviceId === A)?.lastSeq).toBe(7)
    expect(target.segments.chains()).toEqual([{ deviceId: A, toSeq: 7, segments: '[]' }])
    expect(target.segments.compareDevice(join(dir, 'a.sqlite'), A)).toEqual({ compared: 2, differing: 0, first: null })
    source.close()
    target.close()
  })

  it('refuses a segment whose rows are not what it says: another device, outside its range, another count', async () => {
    const dir = await useTempDir()
    const source = openIndex(join(dir, 'a.sqlite'))
    source.entries.registerDevice(A, 'laptop')
    source.entries.apply(A, [file('a'), file('b')])
    const path = join(dir, 'seg.sqlite')
    source.segments.writeSegment(path, { deviceId: A, kind: 'delta', from: 0, to: 2 }, { hostname: 'laptop', firstSeen: 1 })
    expect(() => checkSegment(path, { deviceId: B, kind: 'delta', from: 0, to: 2, entries: 2 }, 'x')).toThrow(/2 rows of another device/)
    expect(() => checkSegment(path, { deviceId: A, kind: 'delta', from: 1, to: 2, entries: 2 }, 'x')).toThrow(/not after 1/)
    expect(() => checkSegment(path, { deviceId: A, kind: 'delta', from: 0, to: 1, entries: 2 }, 'x')).toThrow(/past 1/)
    expect(() => checkSegment(path, { deviceId: A, kind: 'delta', from: 0, to: 2, entries: 3 }, 'x')).toThrow(SnapshotIntegrityError)
    source.close()
  })

  it('names a segment whose schema page is damaged as a segment that cannot be read, not as the local index', async () => {
    const dir = await useTempDir()
    const path = baseOf300(dir)
    const bytes = await readFile(path)
    // Past the 100-byte header, across the first page: the schema SQLite reads at open.
    for (let at = 100; at < bytes.readUInt16BE(16); at += 13) bytes[at] = (bytes[at] ?? 0) ^ 0x5a
    await writeFile(path, bytes)
    const range = { deviceId: A, kind: 'base' as const, from: 0, to: 300, entries: 300 }
    const checks: Array<() => Promise<void>> = [async () => { checkSegment(path, range, 'seg') }, async () => { await checkSegmentAsync(path, range, 'seg', 1) }]
    for (const check of checks) {
      const refused = await check().then(() => undefined, (err: unknown) => err)
      expect(refused).toBeInstanceOf(SnapshotIntegrityError)
      expect((refused as Error).message).toMatch(/^segment seg cannot be read as a database: /)
      expect((refused as Error).message).not.toMatch(/the index|cidsync daemon/)
    }
  })

  it('checks a large segment with its quick check on a thread of its own: the same answers, a damaged file named as such', async () => {
    const dir = await useTempDir()
    const path = baseOf300(dir)
    const range = { deviceId: A, kind: 'base' as const, from: 0, to: 300, entries: 300 }
    // parallelFrom 0: the thread is used whatever the size (a restore uses it from 100,000 rows).
    await checkSegmentAsync(path, range, 'x', 0)
    await expect(checkSegmentAsync(path, { ...range, entries: 301 }, 'x', 0)).rejects.toThrow(/300 rows where 301 were announced/)
    await expect(checkSegmentAsync(path, { ...range, deviceId: B }, 'x', 0)).rejects.toThrow(/rows of another device/)
    // Bytes of the table's pages overwritten (past the schema page): the quick check's thread finds it.
    const bytes = await readFile(path)
    for (let at = 2 * 4096; at < bytes.length; at += 97) bytes[at] = 0xff
    await writeFile(path, bytes)
    await expect(checkSegmentAsync(path, range, 'x', 0)).rejects.toThrow(SnapshotIntegrityError)
    await expect(checkSegmentAsync(join(dir, 'none.sqlite'), range, 'x', 0)).rejects.toThrow(SnapshotIntegrityError)
  })

  it('refuses a segment with a row whose path climbs out of its folder (it would become a path on disk)', async () => {
    const dir = await useTempDir()
    const source = openIndex(join(dir, 'a.sqlite'))
    source.entries.registerDevice(A, 'laptop')
    source.entries.apply(A, [file('a'), file('sub/b')])
    const path = join(dir, 'seg.sqlite')
    source.segments.writeSegment(path, { deviceId: A, kind: 'delta', from: 0, to: 2 }, { hostname: 'laptop', firstSeen: 1 })
    source.close()
    const range = { deviceId: A, kind: 'delta' as const, from: 0, to: 2, entries: 2 }
    checkSegment(path, range, 'x')
    for (const [column, value] of [['path', '../../.ssh/authorized_keys'], ['path', '/etc/passwd'], ['path', 'sub/../../x'], ['path', 'a//b'], ['path', 'sub/.'], ['folder', '..'], ['folder', 'a/b']]) {
      const db = new Database(path)
      const before = db.prepare(`SELECT ${column} FROM entries WHERE path = 'sub/b' OR ${column} = ?`).pluck().get(value) as string
      db.prepare(`UPDATE entries SET ${column} = ? WHERE ${column} = ? AND path LIKE '%b'`).run(value, before)
      db.close()
      expect(() => checkSegment(path, range, 'x'), value).toThrow(/not inside its folder/)
      // A large segment's check (its quick check on a thread of its own): the same refusal, naming the row.
      const refused = await checkSegmentAsync(path, range, 'x', 0).then(() => undefined, (err: Error) => err.message)
      expect(refused, value).toMatch(/not inside its folder/)
      expect(refused, value).toContain(value)
      const undo = new Database(path)
      undo.prepare(`UPDATE entries SET ${column} = ? WHERE ${column} = ?`).run(before, value)
      undo.close()
    }
    checkSegment(path, range, 'x')
  })

  it('refuses a segment that carries anything besides its rows: a trigger, another device, rows in other tables, a loosened column (a restore adopts the largest base as the index)', async () => {
    const dir = await useTempDir()
    const source = openIndex(join(dir, 'a.sqlite'))
    source.entries.registerDevice(A, 'laptop')
    source.entries.apply(A, [file('a'), file('b')])
    const range = { deviceId: A, kind: 'base' as const, from: 0, to: 2 }
    const tamper = (name: string, sql: string): string => {
      const path = join(dir, `${name}.sqlite`)
      source.segments.writeSegment(path, range, { hostname: 'laptop', firstSeen: 1 })
      const db = new Database(path)
      db.exec(sql)
      db.close()
      return path
    }
    checkSegment(tamper('clean', 'SELECT 1'), { ...range, entries: 2 }, 'clean')
    const cases: Array<[string, string, RegExp]> = [
      ['trigger', "CREATE TRIGGER evil AFTER INSERT ON entries BEGIN UPDATE entries SET cid = 'forged'; END", /extra trigger evil/],
      ['ghost', "INSERT INTO devices VALUES ('ghost', 'x', 1, 999)", /devices holds 2 rows/],
      ['chains', "INSERT INTO segment_chains VALUES ('ghost', 1, '[]')", /rows in segment_chains/],
      ['deals', "INSERT INTO deals (cid, requested_at, device_id) VALUES ('bafy', 1, 'x')", /rows in deals/],
      ['loose', 'DROP TABLE segment_chains; CREATE TABLE segment_chains (device_id, to_seq, segments)', /declared otherwise/]
    ]
    for (const [name, sql, why] of cases) {
      expect(() => checkSegment(tamper(name, sql), { ...range, entries: 2 }, name), name).toThrow(why)
    }
    source.close()
  })

  it('counts on past the sequence others know this device at, and forgets its own list then', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'a.sqlite'))
    index.entries.registerDevice(A, 'laptop')
    index.entries.apply(A, [file('a')])
    index.segments.recordChains([{ deviceId: A, toSeq: 1, segments: '[]' }])
    expect(index.segments.catchUpSelf(A, 0)).toBe(false)
    expect(index.segments.catchUpSelf(A, 40)).toBe(true)
    expect(index.segments.devices()[0]?.lastSeq).toBe(41)
    expect(index.segments.chains()).toEqual([])
    index.close()
  })
})
