import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { SyncStore, SYNC_SCHEMA_VERSION, type JobAt } from '../../../src/sync/index.js'
import { useTempDir } from '../../helpers/temp-dir.js'

describe('the sync store', () => {
  it('reads a sync.sqlite written before it had versions the same, and records its version', async () => {
    const dir = await useTempDir()
    const old = new Database(join(dir, 'sync.sqlite'))
    old.exec(`CREATE TABLE publish_jobs (id INTEGER PRIMARY KEY, step TEXT NOT NULL, base_cid TEXT, snapshot_path TEXT,
      snapshot_cid TEXT, marker TEXT, entries INTEGER, merges INTEGER NOT NULL DEFAULT 0, error TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) STRICT;
      CREATE TABLE sync_state (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;`)
    const set = old.prepare('INSERT INTO sync_state (key, value) VALUES (?, ?)')
    for (const [k, v] of [['base_cid', 'bafybase'], ['last_published_cid', 'bafylast'], ['last_published_marker', '[["a",3]]'], ['last_published_at', '2026-01-01T00:00:00.000Z'],
      ['last_published_entries', '7'], ['last_published_own_entries', '5'], ['remote_pointer_cid', 'bafyremote'], ['remote_pointer_at', '2026-01-02T00:00:00.000Z'],
      ['restores', '[{"at":"2026-01-03T00:00:00.000Z","seconds":1.5}]'], ['ipns_key_name', 'k51'], ['ipns_key_id', 'id51']]) set.run(k, v)
    old.prepare("INSERT INTO publish_jobs (step, base_cid, snapshot_path, snapshot_cid, marker, entries, merges, created_at, updated_at) VALUES ('pointer', 'bafybase', '/s.snap', 'bafysnap', '[]', 4, 1, 1, 1)").run()
    old.close()

    const store = new SyncStore(dir)
    try {
      expect(store.base()).toBe('bafybase')
      expect(store.lastPublished()).toEqual({ cid: 'bafylast', marker: '[["a",3]]', at: '2026-01-01T00:00:00.000Z', entries: 7, ownEntries: 5 })
      expect(store.remotePointer()).toEqual({ cid: 'bafyremote', at: '2026-01-02T00:00:00.000Z' })
      expect(store.restores()).toEqual([{ at: '2026-01-03T00:00:00.000Z', seconds: 1.5 }])
      expect(store.ipnsKey()).toEqual({ name: 'k51', id: 'id51' })
      // A job an older cidsync left mid-way (one whole snapshot, no segments) is given up loudly, never resumed wrongly.
      expect(store.current()).toMatchObject({ step: 'pointer', snapshotCid: 'bafysnap', problem: expect.stringMatching(/older cidsync/) })
    } finally {
      store.close()
    }
    const reopened = new Database(join(dir, 'sync.sqlite'))
    expect(reopened.pragma('user_version', { simple: true })).toBe(SYNC_SCHEMA_VERSION)
    reopened.close()
  })

  it('walks a job through its steps, each state change with its step, and refuses a newer schema', async () => {
    const dir = await useTempDir()
    const store = new SyncStore(dir)
    try {
      expect(store.current()).toBeUndefined()
      const job = store.start(null)
      expect(job).toMatchObject({ step: 'snapshot', snapshotCid: null })
      const uploading = store.snapshotted(job, { snapshotPath: '/p.snap', snapshotCid: 'bafyone', marker: '[["a",1]]', entries: 2, files: [], manifest: '{}' })
      const pointing = store.dealt(store.uploaded(uploading))
      expect(store.merged(pointing, 'bafyother')).toMatchObject({ step: 'snapshot', baseCid: 'bafyother', merges: 1 })
      const again = store.dealt(store.uploaded(store.snapshotted(store.current() as JobAt<'snapshot'>, { snapshotPath: '/p.snap', snapshotCid: 'bafytwo', marker: '[["a",2]]', entries: 3, files: [], manifest: '{}' })))
      const naming = store.pointerPut(again, new Date(0))
      expect(naming).toMatchObject({ step: 'name', baseCid: 'bafytwo', merges: 1 })
      expect(store.base()).toBe('bafytwo')
      expect(store.remotePointer()).toEqual({ cid: 'bafytwo', at: new Date(0).toISOString() })
      expect(store.lastPublished()).toBeUndefined()
      expect(store.finishPublish(naming, { ownEntries: 3 })).toMatchObject({ step: 'done' })
      expect(store.current()).toBeUndefined()
      expect(store.lastPublished()).toMatchObject({ cid: 'bafytwo', marker: '[["a",2]]', entries: 3, ownEntries: 3 })
      store.restored('bafyrestored', 2)
      expect(store.base()).toBe('bafyrestored')
      expect(store.restores()).toHaveLength(1)
    } finally {
      store.close()
    }
    const db = new Database(join(dir, 'sync.sqlite'))
    db.pragma(`user_version = ${SYNC_SCHEMA_VERSION + 1}`)
    db.close()
    expect(() => new SyncStore(dir)).toThrow(/schema version/)
  })

  it('logs a publish done for the mirrors in the transaction that records it done: one that fails to end logs nothing', async () => {
    const dir = await useTempDir()
    const store = new SyncStore(dir)
    const other = new Database(join(dir, 'sync.sqlite'))
    try {
      const job = store.start(null)
      const naming = store.pointerPut(store.dealt(store.uploaded(store.snapshotted(job, { snapshotPath: '/p.snap', snapshotCid: 'bafymanifest', marker: '[]', entries: 1, files: [], manifest: '{}' }))))
      // The job's last write refused, as a full disk would refuse it.
      other.exec("CREATE TRIGGER refuse_done BEFORE UPDATE ON publish_jobs WHEN NEW.step = 'done' BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
      const replicate = { segments: ['bafysegment'], profile: 'kubo-cidv1' }
      expect(() => store.finishPublish(naming, { ownEntries: 1, replicate })).toThrow(/disk is full/)
      expect(store.mirrorLog.after(0, 100)).toEqual([])
      expect(store.lastPublished()).toBeUndefined()
      other.exec('DROP TRIGGER refuse_done')
      expect(store.finishPublish(naming, { ownEntries: 1, replicate })).toMatchObject({ step: 'done' })
      expect(store.mirrorLog.after(0, 100).map(r => [r.kind, r.cid])).toEqual([['object', 'bafysegment'], ['object', 'bafymanifest'], ['pointer', 'bafymanifest']])
    } finally {
      other.close()
      store.close()
    }
  })
})
