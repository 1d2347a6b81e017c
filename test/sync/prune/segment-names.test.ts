import { describe, expect, it } from 'vitest'
import Database from 'better-sqlite3'
import { join } from 'node:path'
import { namesIn, type Named } from '../../../src/sync/prune/segment-names.js'
import { useTempDir } from '../../helpers/temp-dir.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'

/** An index database with the columns a prune reads: `rows` entries, `records` content records of two objects each. */
function indexDatabase (path: string, rows: number, records: number): void {
  const db = new Database(path)
  try {
    db.exec(`CREATE TABLE entries (device_id TEXT NOT NULL, folder TEXT NOT NULL, path TEXT NOT NULL, seq INTEGER NOT NULL, cid TEXT, deleted INTEGER NOT NULL,
        PRIMARY KEY (device_id, folder, path)) WITHOUT ROWID;
      CREATE TABLE content (device_id TEXT NOT NULL, cid TEXT NOT NULL, objects TEXT NOT NULL, PRIMARY KEY (device_id, cid)) WITHOUT ROWID;`)
    const entry = db.prepare('INSERT INTO entries VALUES (?, ?, ?, ?, ?, 0)')
    const record = db.prepare('INSERT INTO content VALUES (?, ?, ?)')
    db.transaction(() => {
      for (let i = 0; i < rows; i++) entry.run(A, 'notes', `f${i}.md`, i + 1, `file-${i}`)
      for (let i = 0; i < records; i++) record.run(A, `file-${i}`, JSON.stringify([[`object-${i}`, 0, 10], [`object-${i + 1}`, 0, 10]]))
    })()
  } finally {
    db.close()
  }
}

describe('what a segment names, read for a prune', () => {
  it('hands a large segment\'s rows and records on in bounded batches, every one of them once', async () => {
    const path = join(await useTempDir(), 'segment.sqlite')
    indexDatabase(path, 25_001, 12_000)
    const batches: Named[] = []
    namesIn(path, (named) => { batches.push(named) })
    // A base holds every row of its device: read whole, a million rows would sit in memory at once.
    for (const b of batches) expect(b.rows.length + b.records.length).toBeLessThanOrEqual(10_000)
    const rows = batches.flatMap(b => b.rows)
    expect(rows).toHaveLength(25_001)
    expect(new Set(rows.map(r => r.path)).size).toBe(25_001)
    expect(rows[0]).toEqual({ device: A, folder: 'notes', path: 'f0.md', seq: 1, cid: 'file-0', deleted: 0 })
    const records = batches.flatMap(b => b.records)
    expect(records).toHaveLength(12_000)
    expect(records.find(r => r.cid === 'file-7')?.objects).toEqual(['object-7', 'object-8'])
    expect(batches.every(b => !b.whole)).toBe(true)
  })
})
