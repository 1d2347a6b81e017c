import { describe, it, expect } from 'vitest'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { SnapshotTooLargeError } from '../../src/errors.js'
import { openSegment, readSealedHeader, sealSegment } from '../../src/snapshot/index.js'
import { checkSegment, openIndex, type Index, type NewContentRecord } from '../../src/index/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const A = 'a'.repeat(32)
const hex = (n: number): string => randomBytes(n).toString('hex')

/**
 * A prune's repack moves every live file of the packs it rewrites: one new content record each,
 * and no row changes. The next publish's delta holds a row or two and thousands of records.
 * Answers the delta's database, its range and its counts.
 */
function repackedDelta (dir: string, index: Index, records: number): { database: string, range: { deviceId: string, kind: 'delta', from: number, to: number }, entries: number, records: number } {
  index.entries.registerDevice(A, 'a')
  index.entries.apply(A, [{ kind: 'upsert', folder: 'notes', path: 'one.md', size: 3, mtimeMs: 1, cid: 'bafkreione', cidProfile: 'kubo-cidv1' }])
  const moved: NewContentRecord[] = Array.from({ length: records }, () => ({
    cid: `bafkrei${hex(26)}`, size: 4096, sealing: 'aes-256-gcm/1', keyId: hex(8), keySalt: hex(16),
    objects: JSON.stringify([[`bafybei${hex(26)}`, 4096, 4096 + 28]])
  }))
  index.content.record(A, 'a', moved)
  index.entries.apply(A, [{ kind: 'upsert', folder: 'notes', path: 'one.md', size: 4, mtimeMs: 2, cid: 'bafkreitwo', cidProfile: 'kubo-cidv1' }])
  const range = { deviceId: A, kind: 'delta' as const, from: 1, to: records + 2 }
  const database = join(dir, 'delta.sqlite')
  const written = index.segments.writeSegment(database, range, { hostname: 'a', firstSeen: 1 })
  return { database, range, ...written }
}

async function opened (dir: string, sealed: string, range: { deviceId: string, kind: 'delta', from: number, to: number }, entries: number): Promise<void> {
  await openSegment({ path: sealed, destination: join(dir, `out-${hex(4)}.sqlite`), name: 'bafy-delta', stateDir: dir, acceptUnencrypted: true, expected: { ...range, entries }, check: (d) => { checkSegment(d, { ...range, entries }, 'bafy-delta') } })
}

describe('a delta holding many content records and few rows', () => {
  it('counts its records in the header, and opens: the inflate bound covers them', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'index.sqlite'))
    try {
      const { database, range, entries, records } = repackedDelta(dir, index, 20_000)
      expect({ entries, records }).toEqual({ entries: 1, records: 20_000 })
      const sealed = await sealSegment({ database, path: join(dir, 'delta.seg'), range, entries, records, encryption: 'none', stateDir: dir })
      expect(await readSealedHeader(sealed.path)).toMatchObject({ entries: 1, records: 20_000 })
      await opened(dir, sealed.path, range, entries)
    } finally {
      index.close()
    }
  })

  it('opens too where its header does not count them, as a segment written before it did', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'index.sqlite'))
    try {
      const { database, range, entries } = repackedDelta(dir, index, 20_000)
      const sealed = await sealSegment({ database, path: join(dir, 'delta.seg'), range, entries, encryption: 'none', stateDir: dir })
      expect(await readSealedHeader(sealed.path)).not.toHaveProperty('records')
      await opened(dir, sealed.path, range, entries)
    } finally {
      index.close()
    }
  })

  it('is still refused as a bomb where it inflates past what its records and size allow', async () => {
    const dir = await useTempDir()
    const index = openIndex(join(dir, 'index.sqlite'))
    try {
      const { database, range, entries } = repackedDelta(dir, index, 10)
      // Claims 10 records: a few hundred KiB of zeros more than they could hold.
      index.db.exec(`ATTACH DATABASE '${database}' AS d; CREATE TABLE d.padding (b BLOB); INSERT INTO d.padding VALUES (zeroblob(64 * 1024 * 1024)); DETACH DATABASE d`)
      const sealed = await sealSegment({ database, path: join(dir, 'delta.seg'), range, entries, records: 10, encryption: 'none', stateDir: dir })
      await expect(opened(dir, sealed.path, range, entries)).rejects.toBeInstanceOf(SnapshotTooLargeError)
    } finally {
      index.close()
    }
  })
})
