import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { checkSegment, openIndex, META_SCHEMA_VERSION, type FileMeta } from '../../src/index/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'
const meta = (over: Partial<FileMeta> = {}): FileMeta => ({ kind: 'file', mode: 0o755, uid: 1000, gid: 1000, owner: 'alice', group: 'staff', target: null, linkGroup: null, ...over })
const upsert = (path: string, m?: FileMeta, cid: string | null = `cid-${path}`) => ({ kind: 'upsert' as const, folder: 'notes', path, size: 10, mtimeMs: 1.5, cid, cidProfile: 'kubo-cidv1', meta: m })
const versionOf = (path: string): number => {
  const db = new Database(path, { readonly: true })
  try { return db.pragma('user_version', { simple: true }) as number } finally { db.close() }
}

describe('what an entry is, in the index and its segments', () => {
  it('keeps type, mode (setuid too), owner, link target and hard-link group; a directory row sorts where a walk meets it', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'a.sqlite'))
    index.entries.registerDevice(A, 'laptop')
    index.entries.apply(A, [
      upsert('bin/tool', meta({ mode: 0o4755 })),
      upsert('bin/', meta({ kind: 'dir', mode: 0o700 }), null),
      upsert('bin-old', meta({ kind: 'symlink', mode: 0o777, target: '../elsewhere' }), null),
      upsert('a.txt', meta({ linkGroup: '2049:17' })),
      upsert('b.txt', meta({ linkGroup: '2049:17' })),
      upsert('legacy.txt')
    ])
    expect(index.entries.get(A, 'notes', 'bin/tool')?.meta).toEqual(meta({ mode: 0o4755 }))
    expect(index.entries.get(A, 'notes', 'bin-old')?.meta).toMatchObject({ kind: 'symlink', target: '../elsewhere' })
    expect(index.entries.get(A, 'notes', 'legacy.txt')?.meta).toBeNull()
    // Directories only when asked: files and links are what most readers want.
    expect(index.entries.list({ deviceId: A }).map(e => e.path)).toEqual(['a.txt', 'b.txt', 'bin-old', 'bin/tool', 'legacy.txt'])
    expect(index.entries.list({ deviceId: A, dirs: true }).map(e => e.path)).toEqual(['a.txt', 'b.txt', 'bin-old', 'bin/', 'bin/tool', 'legacy.txt'])
    // Totals count files alone.
    expect(index.entries.totals(A)).toEqual([{ folder: 'notes', files: 4, bytes: 40 }])
    index.close()
  })

  it('shares one frozen meta between rows that say the same, and never between rows whose names only run together', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'a.sqlite'))
    index.entries.registerDevice(A, 'laptop')
    index.entries.apply(A, [
      upsert('one', meta()),
      upsert('two', meta()),
      upsert('three', meta({ mode: 0o644 })),
      // Owner and group that a key joining them without their lengths would confuse.
      upsert('four', meta({ owner: 'ali', group: 'cestaff' })),
      upsert('five', meta({ owner: 'alice', group: 'staff' })),
      upsert('six', meta({ owner: 'ab1:', group: 'c' })),
      upsert('seven', meta({ owner: 'ab', group: '1:c' }))
    ])
    const of = (path: string): FileMeta | null | undefined => index.entries.list({ deviceId: A }).find(e => e.path === path)?.meta
    expect(of('one')).toBe(of('two'))
    expect(Object.isFrozen(of('one'))).toBe(true)
    expect(of('three')).toEqual(meta({ mode: 0o644 }))
    expect(of('four')).toEqual(meta({ owner: 'ali', group: 'cestaff' }))
    expect(of('five')).toBe(of('one'))
    expect(of('six')).toEqual(meta({ owner: 'ab1:', group: 'c' }))
    expect(of('seven')).toEqual(meta({ owner: 'ab', group: '1:c' }))
    // A meta with a link or a target is its row's own.
    index.entries.apply(A, [upsert('l1', meta({ linkGroup: '1:2' })), upsert('l2', meta({ linkGroup: '1:2' }))])
    expect(of('l1')).not.toBe(of('l2'))
    index.close()
  })

  it('travels in segments at the schema that records it; a segment from before applies with nothing recorded', async () => {
    const dir = await useTempDir()
    const source = openIndex(join(dir, 'a.sqlite'))
    source.entries.registerDevice(A, 'laptop')
    source.entries.apply(A, [upsert('old.txt')])
    source.segments.writeSegment(join(dir, 'old.sqlite'), { deviceId: A, kind: 'base', from: 0, to: 1 }, { hostname: 'laptop', firstSeen: 1 })
    expect(versionOf(join(dir, 'old.sqlite'))).toBeLessThan(META_SCHEMA_VERSION)
    source.entries.apply(A, [upsert('run.sh', meta({ mode: 0o750 })), upsert('link', meta({ kind: 'symlink', target: 'run.sh' }), null)])
    source.segments.writeSegment(join(dir, 'delta.sqlite'), { deviceId: A, kind: 'delta', from: 1, to: 3 }, { hostname: 'laptop', firstSeen: 1 })
    expect(versionOf(join(dir, 'delta.sqlite'))).toBe(META_SCHEMA_VERSION)
    checkSegment(join(dir, 'old.sqlite'), { deviceId: A, kind: 'base', from: 0, to: 1, entries: 1 }, 'base')
    checkSegment(join(dir, 'delta.sqlite'), { deviceId: A, kind: 'delta', from: 1, to: 3, entries: 2 }, 'delta')

    const target = openIndex(join(dir, 'b.sqlite'))
    target.entries.registerDevice(B, 'desktop')
    target.segments.applyDevices([{ deviceId: A, hostname: 'laptop', firstSeen: 1, lastSeq: 3, replace: true, files: [join(dir, 'old.sqlite'), join(dir, 'delta.sqlite')], chain: { deviceId: A, toSeq: 3, segments: '[]' } }])
    expect(target.entries.get(A, 'notes', 'old.txt')?.meta).toBeNull()
    expect(target.entries.get(A, 'notes', 'run.sh')?.meta).toEqual(meta({ mode: 0o750 }))
    expect(target.entries.get(A, 'notes', 'link')?.meta).toMatchObject({ kind: 'symlink', target: 'run.sh' })
    source.close()
    target.close()
  })

  it('reads a mode outside the permission bits (a forged row) as private', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'a.sqlite'))
    index.entries.registerDevice(A, 'laptop')
    index.entries.apply(A, [upsert('x', meta({ mode: 0o170777 })), upsert('y', meta({ mode: -1 }))])
    expect(index.entries.get(A, 'notes', 'x')?.meta?.mode).toBe(0o600)
    expect(index.entries.get(A, 'notes', 'y')?.meta?.mode).toBe(0o600)
    index.close()
  })
})
