import { describe, expect, it, onTestFinished } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { openIndex, type EntryChange, type Index } from '../../src/index/index.js'
import { dupes, find, FindService, SearchCache, where } from '../../src/find/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const CID_A = 'bafkreiaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
const CID_B = 'bafkreibbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'

function put (folder: string, path: string, size = 10, cid = CID_A): EntryChange {
  return { kind: 'upsert', folder, path, size, mtimeMs: 1_700_000_000_000, cid, cidProfile: 'kubo-cidv1' }
}

async function setUp (): Promise<{ index: Index, cache: SearchCache, dir: string }> {
  const dir = await useTempDir()
  const index = openIndex(join(dir, 'index.sqlite'))
  onTestFinished(() => { index.close() })
  for (const [id, host] of [['aaaa1111', 'laptop'], ['bbbb2222', 'desk'], ['cccc3333', 'phone']]) index.entries.registerDevice(id as string, host as string)
  index.entries.apply('aaaa1111', [put('docs', 'report-2024.pdf', 500, CID_B), put('docs', 'notes/todo.txt'), put('photos', 'cat.jpg', 2000)])
  index.entries.apply('bbbb2222', [put('docs', 'report-2024.pdf', 500, CID_B), put('music', 'song "live".mp3', 30)])
  index.entries.apply('cccc3333', [put('docs', 'old report.pdf', 500, CID_B)])
  const cache = new SearchCache(join(dir, 'search.sqlite'))
  onTestFinished(() => { cache.close() })
  return { index, cache, dir }
}

const paths = (r: ReturnType<typeof find>): string[] => r.results.map(f => `${f.deviceId.slice(0, 4)}:${f.folder}/${f.path}`)

describe('find', () => {
  it('finds a substring in any case across every device, the file\'s own name first, and a glob over names', async () => {
    const { index, cache } = await setUp()
    expect(cache.catchUp(index)).toMatchObject({ rebuilt: true, rows: 6 })
    expect(cache.catchUp(index)).toEqual({ rows: 0, rebuilt: false, complete: true })
    expect(paths(find(cache, index, { pattern: 'REPORT' }))).toEqual(['aaaa:docs/report-2024.pdf', 'bbbb:docs/report-2024.pdf', 'cccc:docs/old report.pdf'])
    expect(paths(find(cache, index, { pattern: 'report', deviceId: 'cccc3333' }))).toEqual(['cccc:docs/old report.pdf'])
    // Two characters: under the trigram index's reach, still found (by a scan).
    expect(paths(find(cache, index, { pattern: 'at' }))).toEqual(['aaaa:photos/cat.jpg'])
    expect(paths(find(cache, index, { pattern: '*.pdf' })).sort()).toEqual(['aaaa:docs/report-2024.pdf', 'bbbb:docs/report-2024.pdf', 'cccc:docs/old report.pdf'])
    expect(paths(find(cache, index, { pattern: 'report-????.pdf' }))).toEqual(['aaaa:docs/report-2024.pdf', 'bbbb:docs/report-2024.pdf'])
    expect(paths(find(cache, index, { pattern: 'docs/*/todo.*' }))).toEqual(['aaaa:docs/notes/todo.txt'])
    const hit = find(cache, index, { pattern: 'cat.jpg' }).results[0]
    expect(hit).toMatchObject({ size: 2000, cid: CID_A, deleted: false, stored: 'local-only', mtimeMs: 1_700_000_000_000 })
  })

  it('follows the index as rows change, and shows deleted files only when asked', async () => {
    const { index, cache } = await setUp()
    cache.catchUp(index)
    index.entries.apply('aaaa1111', [{ kind: 'delete', folder: 'photos', path: 'cat.jpg' }, put('photos', 'dog.jpg')])
    expect(cache.catchUp(index)).toEqual({ rows: 2, rebuilt: false, complete: true })
    expect(find(cache, index, { pattern: 'cat' }).results).toEqual([])
    expect(find(cache, index, { pattern: 'cat', includeDeleted: true }).results).toMatchObject([{ path: 'cat.jpg', deleted: true }])
    expect(paths(find(cache, index, { pattern: 'dog' }))).toEqual(['aaaa:photos/dog.jpg'])
    // Revived: live again, once.
    index.entries.apply('aaaa1111', [put('photos', 'cat.jpg', 7)])
    cache.catchUp(index)
    expect(find(cache, index, { pattern: 'cat', includeDeleted: true }).results).toMatchObject([{ path: 'cat.jpg', deleted: false, size: 7 }])
  })

  it('builds the copy again when the index went back (restored from an older point)', async () => {
    const { index, cache, dir } = await setUp()
    const older = join(dir, 'older.sqlite')
    index.copyTo(older)
    cache.catchUp(index)
    index.entries.apply('aaaa1111', [put('docs', 'later.txt')])
    cache.catchUp(index)
    expect(find(cache, index, { pattern: 'later' }).results).toHaveLength(1)
    const restored = openIndex(older)
    onTestFinished(() => { restored.close() })
    expect(cache.catchUp(restored)).toMatchObject({ rebuilt: true })
    expect(find(cache, restored, { pattern: 'later' }).results).toEqual([])
  })

  it('catches up a few rows a call under a budget, searchable as it goes, complete at the end', async () => {
    const { index, cache } = await setUp()
    expect(cache.catchUp(index, { budget: 4 })).toEqual({ rows: 4, rebuilt: true, complete: false })
    expect(find(cache, index, { pattern: 'report-2024' }).results).toHaveLength(2)
    expect(find(cache, index, { pattern: 'old report' }).results).toHaveLength(0)
    expect(cache.catchUp(index, { budget: 4 })).toEqual({ rows: 2, rebuilt: false, complete: true })
    expect(paths(find(cache, index, { pattern: 'report' }))).toHaveLength(3)
    expect(cache.catchUp(index, { budget: 4 })).toEqual({ rows: 0, rebuilt: false, complete: true })
    index.entries.apply('cccc3333', [put('docs', 'new.txt')])
    expect(cache.catchUp(index, { budget: 4 })).toEqual({ rows: 1, rebuilt: false, complete: true })
  })

  it('matches quotes, %, _, *, backslashes and markup literally', async () => {
    const { index, cache } = await setUp()
    const odd = ['100% done.txt', 'a_b.txt', 'axb.txt', 'star*name.txt', 'it\'s "quoted".txt', '<img src=x onerror=alert(1)>.html', 'back\\slash.txt', 'caf\u00e9 [draft].txt', 'bad\\xff-byte.txt']
    index.entries.apply('aaaa1111', odd.map(name => put('odd', name)))
    cache.catchUp(index)
    expect(paths(find(cache, index, { pattern: '100%' }))).toEqual(['aaaa:odd/100% done.txt'])
    expect(paths(find(cache, index, { pattern: '0%' }))).toEqual(['aaaa:odd/100% done.txt'])
    expect(paths(find(cache, index, { pattern: 'a_b' }))).toEqual(['aaaa:odd/a_b.txt'])
    expect(paths(find(cache, index, { pattern: '_' }))).toEqual(['aaaa:odd/a_b.txt'])
    expect(paths(find(cache, index, { pattern: 'star*', literal: true }))).toEqual(['aaaa:odd/star*name.txt'])
    expect(paths(find(cache, index, { pattern: '"quoted"' }))).toEqual(['aaaa:odd/it\'s "quoted".txt'])
    expect(paths(find(cache, index, { pattern: '\'s "' }))).toEqual(['aaaa:odd/it\'s "quoted".txt'])
    expect(paths(find(cache, index, { pattern: '<img' }))).toEqual(['aaaa:odd/<img src=x onerror=alert(1)>.html'])
    expect(paths(find(cache, index, { pattern: 'back\\sl' }))).toEqual(['aaaa:odd/back\\slash.txt'])
    expect(paths(find(cache, index, { pattern: '[draft]' }))).toEqual(['aaaa:odd/caf\u00e9 [draft].txt'])
    expect(paths(find(cache, index, { pattern: '*[draft]*' }))).toEqual(['aaaa:odd/caf\u00e9 [draft].txt'])
    expect(paths(find(cache, index, { pattern: '\\xff' }))).toEqual(['aaaa:odd/bad\\xff-byte.txt'])
    expect(find(cache, index, { pattern: 'NEAR MATCH' }).results).toEqual([])
  })

  it('limits and ranks what it shows, and says when more matched', async () => {
    const { index, cache } = await setUp()
    index.entries.apply('bbbb2222', Array.from({ length: 30 }, (_, i) => put('many', `dir/report-${i}.txt`)))
    cache.catchUp(index)
    const result = find(cache, index, { pattern: 'report', limit: 5 })
    expect(result.results).toHaveLength(5)
    expect(result.more).toBe(true)
  })
})

describe('where and dupes', () => {
  it('answers every device and path holding a CID, and the duplicates with what they would free', async () => {
    const { index, cache } = await setUp()
    cache.catchUp(index)
    const found = where(cache, index, CID_B)
    expect(found.stored).toBe('local-only')
    expect(found.holders.map(h => `${h.hostname}:${h.folder}/${h.path}`).sort()).toEqual(['desk:docs/report-2024.pdf', 'laptop:docs/report-2024.pdf', 'phone:docs/old report.pdf'])
    expect(where(cache, index, 'bafkreinothere').holders).toEqual([])

    const all = dupes(cache, { own: 'aaaa1111' })
    // CID_A: 3 copies, 2 on this device, counted at the largest size (2,000 B, 1 extra copy here);
    // CID_B: 3 copies, 1 here. Another device's copy is on its own disk: it frees nothing here.
    expect(all.groups.map(g => [g.cid, g.copies.length, g.here, g.reclaimable])).toEqual([[CID_A, 3, 2, 2000], [CID_B, 3, 1, 0]])
    expect(all.totalReclaimable).toBe(2000)
    expect(dupes(cache, { own: 'bbbb2222' }).totalReclaimable).toBe(0)
    expect(dupes(cache).totalReclaimable).toBe(0)
    expect(dupes(cache, { own: 'aaaa1111', minSize: 2001 }).groups).toEqual([])
    index.entries.apply('cccc3333', [{ kind: 'delete', folder: 'docs', path: 'old report.pdf' }])
    cache.catchUp(index)
    expect(dupes(cache, { own: 'aaaa1111' }).groups.find(g => g.cid === CID_B)?.copies).toHaveLength(2)
    expect(where(cache, index, CID_B).holders).toHaveLength(2)
    expect(where(cache, index, CID_B, { includeDeleted: true }).holders).toHaveLength(3)
    // Bounded: the tooling endpoint asks for at most a page, and is told there is more.
    expect(where(cache, index, CID_B, { includeDeleted: true, limit: 2 })).toMatchObject({ more: true, holders: [{}, {}] })
    expect(where(cache, index, CID_B, { includeDeleted: true, limit: 3 }).more).toBe(false)
  })

  it('lists the largest groups first when there are more than the limit, and counts every one in the total', async () => {
    const { index, cache } = await setUp()
    // 40 groups of two copies each on this device, sizes in a scrambled order; some equal, told apart by CID.
    const sizes = Array.from({ length: 40 }, (_, i) => ((i * 17) % 23) * 100 + 1)
    const cidOf = (i: number): string => `bafkreig${String(i).padStart(52, 'x')}`
    index.entries.apply('aaaa1111', sizes.map((size, i) => put('many', `a-${i}`, size, cidOf(i))))
    index.entries.apply('aaaa1111', sizes.map((size, i) => put('many', `b-${i}`, size, cidOf(i))))
    cache.catchUp(index)
    const everything = dupes(cache, { own: 'aaaa1111', limit: 1000 })
    const top = dupes(cache, { own: 'aaaa1111', limit: 5 })
    expect(top.groups.map(g => g.cid)).toEqual(everything.groups.slice(0, 5).map(g => g.cid))
    expect(top.more).toBe(true)
    expect(top.totalReclaimable).toBe(everything.totalReclaimable)
    const reclaimable = everything.groups.map(g => g.reclaimable)
    expect(reclaimable).toEqual([...reclaimable].sort((a, b) => b - a))
  })
})

describe('browse', () => {
  it('shows this device\'s tree when no device is asked for, not the one whose id sorts first', async () => {
    const { index, dir } = await setUp()
    await writeFile(join(dir, 'device-id'), 'bbbb2222\n')
    const service = new FindService(() => index, dir)
    onTestFinished(() => { service.close() })
    expect(service.browse(undefined, '')).toMatchObject({ deviceId: 'bbbb2222', dirs: [{ name: 'docs' }, { name: 'music' }] })
    expect(service.browse('aaaa1111', '')).toMatchObject({ deviceId: 'aaaa1111' })
  })
})
