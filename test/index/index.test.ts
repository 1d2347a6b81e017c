import { describe, it, expect } from 'vitest'
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import Database from 'better-sqlite3'
import { openIndex, openIndexRecovering, SCHEMA_VERSION, loadOrCreateDeviceId, LEAN_CACHE_KIB } from '../../src/index/index.js'
import { IndexDamagedError, IndexMissingError, SchemaTooNewError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'
const file = (path: string, cid = `cid-${path}`) => ({ kind: 'upsert' as const, folder: 'notes', path, size: 10, mtimeMs: 1.5, cid, cidProfile: 'kubo-cidv1' })

describe('the index', () => {
  it('is created with WAL and the current schema version', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'index.sqlite'))
    expect(index.db.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(index.db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION)
    index.close()
  })

  it('gives each device its own gap-free sequence, only for writes that change something', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'index.sqlite'))
    index.entries.registerDevice(A, 'laptop')
    index.entries.registerDevice(B, 'desktop')
    expect(index.entries.apply(A, [file('a'), file('b'), { kind: 'delete', folder: 'notes', path: 'never-indexed' }])).toBe(2)
    expect(index.entries.apply(B, [file('a')])).toBe(1)
    expect(index.entries.apply(A, [{ kind: 'delete', folder: 'notes', path: 'a' }])).toBe(1)
    const rows = index.entries.list({ includeDeleted: true }).map(e => [e.deviceId === A ? 'A' : 'B', e.path, e.seq, e.deleted])
    expect(rows).toEqual([['A', 'a', 3, true], ['B', 'a', 1, false], ['A', 'b', 2, false]])
    expect(index.entries.totals(A)).toEqual([{ folder: 'notes', files: 1, bytes: 10 }])
    index.close()
  })

  it('lists by folder/path prefix, case-sensitively', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'index.sqlite'))
    index.entries.registerDevice(A, '')
    index.entries.apply(A, [file('docs/x.md'), file('Docs/y.md'), file('docsz.md')])
    expect(index.entries.list({ prefix: 'notes/docs/' }).map(e => e.path)).toEqual(['docs/x.md'])
    expect(index.entries.list({ prefix: 'notes/docs' }).map(e => e.path)).toEqual(['docs/x.md', 'docsz.md'])
    index.close()
  })

  it('can be read by a second, read-only connection while the writer holds it open', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'index.sqlite')
    const writer = openIndex(path)
    writer.entries.registerDevice(A, '')
    writer.entries.apply(A, [file('one')])
    const reader = openIndex(path, { readonly: true })
    expect(reader.entries.list().map(e => e.path)).toEqual(['one'])
    writer.entries.apply(A, [file('two')])
    expect(reader.entries.list().map(e => e.path)).toEqual(['one', 'two'])
    expect(() => reader.entries.apply(A, [file('three')])).toThrow(/read-only/)
    reader.close()
    writer.close()
  })

  it('refuses an index from a newer cidsync, saying what to do', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'index.sqlite')
    const raw = new Database(path)
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`)
    raw.close()
    expect(() => openIndex(path)).toThrow(SchemaTooNewError)
    expect(() => openIndex(path)).toThrow(/upgrade cidsync/)
  })

  it('is missing, not empty, for a reader when no daemon made it yet', async () => {
    const dir = await useTempDir()
    expect(() => openIndex(join(dir, 'index.sqlite'), { readonly: true })).toThrow(IndexMissingError)
  })

  it('keeps one device id per state dir', async () => {
    const dir = await useTempDir()
    const id = loadOrCreateDeviceId(dir)
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    expect(loadOrCreateDeviceId(dir)).toBe(id)
    expect(loadOrCreateDeviceId(await useTempDir())).not.toBe(id)
  })

  it('is created 0600 with its -wal and -shm, and an older one readable by others is tightened', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'index.sqlite')
    const index = openIndex(path)
    index.entries.registerDevice(A, '')
    index.entries.apply(A, [file('one')])
    for (const name of ['index.sqlite', 'index.sqlite-wal', 'index.sqlite-shm']) expect(statSync(join(dir, name)).mode & 0o777).toBe(0o600)
    index.close()
    chmodSync(path, 0o644)
    openIndex(path).close()
    expect(statSync(path).mode & 0o777).toBe(0o600)
  })

  it('refuses a file that is not a database, and one whose pages fail the quick check, as damaged (exit 4)', async () => {
    const dir = await useTempDir()
    const garbage = join(dir, 'garbage.sqlite')
    writeFileSync(garbage, Buffer.alloc(8192, 'not a database at all. '))
    expect(() => openIndex(garbage)).toThrow(IndexDamagedError)
    const damaged = join(dir, 'index.sqlite')
    const index = openIndex(damaged)
    index.entries.registerDevice(A, '')
    index.entries.apply(A, Array.from({ length: 2000 }, (_, i) => file(`dir/${i}/${'x'.repeat(40)}`)))
    index.close()
    // Scribble over the middle of the table's pages, as a bad disk block would.
    const bytes = readFileSync(damaged)
    bytes.fill(0x55, Math.floor(bytes.byteLength / 2), Math.floor(bytes.byteLength / 2) + 4096)
    writeFileSync(damaged, bytes)
    let err: unknown
    try { openIndex(damaged) } catch (e) { err = e }
    expect(err).toBeInstanceOf(IndexDamagedError)
    expect((err as IndexDamagedError).exitCode).toBe(4)
    expect((err as Error).message).toContain('moves it aside and rebuilds it')
  })

  it('at daemon start, moves a damaged index aside (kept, named with the time) and makes a fresh one', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'index.sqlite')
    const first = openIndexRecovering(path)
    expect(first).toMatchObject({ created: true, damaged: undefined })
    first.index.close()
    writeFileSync(path, Buffer.alloc(8192, 'garbage '))
    const opened = openIndexRecovering(path)
    expect(opened.created).toBe(false)
    expect(opened.damaged?.movedTo).toMatch(/index\.sqlite\.damaged-\d{4}-\d\d-\d\dT[\d-]+Z$/)
    expect(opened.index.entries.list()).toEqual([])
    opened.index.close()
    expect(readFileSync(opened.damaged?.movedTo as string).subarray(0, 7).toString()).toBe('garbage')
    expect(readdirSync(dir).filter(n => n.startsWith('index.sqlite.damaged-'))).toEqual([basename(opened.damaged?.movedTo as string)])
    expect(existsSync(path)).toBe(true)
  })

  it('holds the daemon\'s page cache to 2 MiB (better-sqlite3 builds 16 MiB a connection), the quick check at open included', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'index.sqlite')
    const { index } = openIndexRecovering(path)
    expect(index.db.pragma('cache_size', { simple: true })).toBe(-LEAN_CACHE_KIB)
    expect(LEAN_CACHE_KIB).toBe(2_048)
    index.close()
    // Commands that read a whole index once keep the build's cache.
    const reader = openIndex(path, { readonly: true })
    expect(reader.db.pragma('cache_size', { simple: true })).toBe(-16_000)
    reader.close()
  })
})
