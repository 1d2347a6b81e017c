import type Database from 'better-sqlite3'
import type { Statement } from 'better-sqlite3'
import { KEY } from './keys.js'

/**
 * What came of an index object found in the store: uploaded by this device, waiting to be read,
 * read, sealed under another key, or refused (damaged, forged, or unreadable too many times).
 */
export type IndexObjectState = 'own' | 'pending' | 'read' | 'foreign-key' | 'refused'

/** A record another device's index object holds, as the content index keeps it. */
export interface KnownRecord {
  readonly deviceId: string
  readonly cid: string
  readonly keyId: string
  readonly seq: number
  /** The record's JSON as parsed (`ContentRecord`). */
  readonly record: string
  /** The index object it came from. */
  readonly object: string
}

/** The newest object of the store's listing when it was last walked for index objects. */
export interface ListingHead { readonly cid: string, readonly storedAt?: number }

type Name = 'sentValue' | 'setValue' | 'knows' | 'found' | 'pending' | 'waiting' | 'upsert' | 'done' | 'tried' | 'known' | 'taken' | 'takenOf' | 'takenCount' | 'refused'

/**
 * The repository's content index in `sync.sqlite` (docs/content-format.md, "Content index"):
 * the records read from other devices' index objects, by CID and key; each index object found
 * in the store with what came of it (so none is fetched twice); how far this device's own records
 * were sent; and where the last walk of the listing began.
 */
export class ContentIndexState {
  private readonly s: Record<Name, Statement>
  /** Prepared once the temp table exists ({@link clearListed}). */
  private listedOne: Statement | undefined

  constructor (private readonly db: Database.Database) {
    this.s = {
      sentValue: db.prepare('SELECT value FROM sync_state WHERE key = ?').pluck(),
      setValue: db.prepare('INSERT INTO sync_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value'),
      knows: db.prepare('SELECT 1 FROM content_index_objects WHERE cid = ?').pluck(),
      found: db.prepare("INSERT INTO content_index_objects (cid, state, found_at) VALUES (?, 'pending', ?) ON CONFLICT (cid) DO NOTHING"),
      pending: db.prepare("SELECT cid, tries FROM content_index_objects WHERE state = 'pending' ORDER BY found_at, cid LIMIT ?"),
      waiting: db.prepare("SELECT COUNT(*) FROM content_index_objects WHERE state = 'pending'").pluck(),
      // A device's later record of a CID replaces its earlier one, as merges decide.
      upsert: db.prepare(`INSERT INTO content_index (cid, key_id, device_id, seq, record, object) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (cid, key_id, device_id) DO UPDATE SET seq = excluded.seq, record = excluded.record, object = excluded.object WHERE excluded.seq > seq`),
      done: db.prepare(`INSERT INTO content_index_objects (cid, state, device_id, records, error, found_at, done_at) VALUES (@cid, @state, @device, @records, @error, @at, @at)
        ON CONFLICT (cid) DO UPDATE SET state = excluded.state, device_id = excluded.device_id, records = excluded.records, error = excluded.error, done_at = excluded.done_at`),
      tried: db.prepare('UPDATE content_index_objects SET tries = tries + 1, error = ? WHERE cid = ?'),
      known: db.prepare('SELECT device_id AS deviceId, cid, key_id AS keyId, seq, record, object FROM content_index WHERE cid = ? AND key_id = ? ORDER BY seq DESC LIMIT 1'),
      taken: db.prepare('INSERT INTO content_taken (cid, key_id) VALUES (?, ?) ON CONFLICT DO NOTHING'),
      takenOf: db.prepare('SELECT cid FROM content_taken WHERE key_id = ? ORDER BY cid').pluck(),
      takenCount: db.prepare('SELECT COUNT(*) FROM content_taken WHERE key_id = ?').pluck(),
      refused: db.prepare("SELECT COUNT(*) FROM content_index_objects WHERE state = 'refused'").pluck()
    }
  }

  /** The last sequence number of `deviceId`'s records an uploaded index object holds (0: none). */
  sent (deviceId: string): number {
    try {
      const value = JSON.parse(this.s.sentValue.get(KEY.contentIndexSent) as string | undefined ?? 'null') as { deviceId?: unknown, seq?: unknown } | null
      return value?.deviceId === deviceId && typeof value.seq === 'number' ? value.seq : 0
    } catch {
      // Sent again from the start: a reader takes a record twice as once.
      return 0
    }
  }

  /**
   * An index object holding `deviceId`'s records up to `seq` is in the store: the cursor moves and
   * the object is known as this device's, in one transaction. Called only once the upload answered
   * (no object: the records up to `seq` were none to send, under another key).
   */
  noteSent (deviceId: string, seq: number, object: string | undefined, records: number, at = Date.now()): void {
    this.db.transaction(() => {
      this.s.setValue.run(KEY.contentIndexSent, JSON.stringify({ deviceId, seq }))
      if (object !== undefined) this.s.done.run({ cid: object, state: 'own', device: deviceId, records, error: null, at })
    }).immediate()
  }

  head (): ListingHead | undefined {
    try {
      const value = JSON.parse(this.s.sentValue.get(KEY.contentIndexHead) as string | undefined ?? 'null') as { cid?: unknown, storedAt?: unknown } | null
      if (typeof value?.cid !== 'string') return undefined
      return typeof value.storedAt === 'number' ? { cid: value.cid, storedAt: value.storedAt } : { cid: value.cid }
    } catch {
      return undefined
    }
  }

  noteHead (head: ListingHead): void {
    this.s.setValue.run(KEY.contentIndexHead, JSON.stringify(head))
  }

  /**
   * The index objects `deviceId`'s last full compaction wrote, and the sequence number up to which
   * they hold its records; undefined before the first one (or for another device's).
   */
  compactionBase (deviceId: string): { readonly seq: number, readonly objects: readonly string[] } | undefined {
    try {
      const value = JSON.parse(this.s.sentValue.get(KEY.contentIndexBase) as string | undefined ?? 'null') as { deviceId?: unknown, seq?: unknown, objects?: unknown } | null
      if (value?.deviceId !== deviceId || typeof value.seq !== 'number' || !Array.isArray(value.objects) || !value.objects.every(o => typeof o === 'string')) return undefined
      return { seq: value.seq, objects: value.objects as string[] }
    } catch {
      // A full compaction comes next, and writes it again.
      return undefined
    }
  }

  /** A full compaction's objects hold every record of `deviceId` up to `seq`: the next compactions leave them be. */
  noteCompactionBase (deviceId: string, seq: number, objects: readonly string[]): void {
    this.s.setValue.run(KEY.contentIndexBase, JSON.stringify({ deviceId, seq, objects }))
  }

  /** How many records the named own objects hold, as they were uploaded. */
  ownRecords (objects: readonly string[]): number {
    return this.db.prepare("SELECT COALESCE(SUM(records), 0) FROM content_index_objects WHERE state = 'own' AND cid IN (SELECT value FROM json_each(?))").pluck().get(JSON.stringify(objects)) as number
  }

  /** The index objects this device uploaded, oldest first: what a compaction replaces. */
  ownObjects (deviceId: string): string[] {
    return this.db.prepare("SELECT cid FROM content_index_objects WHERE state = 'own' AND device_id = ? ORDER BY done_at, cid").pluck().all(deviceId) as string[]
  }

  /**
   * A compaction's object holding `deviceId`'s records up to `seq`: known as this device's. The
   * cursor only moves forward: the records past it are in this object, and not sent again.
   */
  noteCompacted (deviceId: string, seq: number, object: string, records: number, at = Date.now()): void {
    this.db.transaction(() => {
      if (this.sent(deviceId) < seq) this.s.setValue.run(KEY.contentIndexSent, JSON.stringify({ deviceId, seq }))
      this.s.done.run({ cid: object, state: 'own', device: deviceId, records, error: null, at })
    }).immediate()
  }

  /** Index objects deleted (a compaction replaced them): forgotten here, as if never found. */
  forgetObjects (objects: readonly string[]): void {
    const drop = this.db.prepare("DELETE FROM content_index_objects WHERE cid = ? AND state = 'own'")
    this.db.transaction(() => { for (const cid of objects) drop.run(cid) }).immediate()
  }

  /** Whether this index object was found before (read, skipped, refused, waiting, or uploaded here). */
  knows (object: string): boolean {
    return this.s.knows.get(object) === 1
  }

  /** Index objects a walk found, to be read (those known already are left as they are). */
  found (objects: readonly string[], at = Date.now()): void {
    this.db.transaction(() => { for (const cid of objects) this.s.found.run(cid, at) }).immediate()
  }

  /** Index objects waiting to be read, oldest found first, at most `limit`. */
  pending (limit: number): Array<{ readonly cid: string, readonly tries: number }> {
    return this.s.pending.all(limit) as Array<{ cid: string, tries: number }>
  }

  /** How many index objects wait to be read. */
  waiting (): number {
    return this.s.waiting.get() as number
  }

  /** An index object read: its records kept and the object marked read, in one transaction. */
  noteRead (object: string, deviceId: string, records: ReadonlyArray<Omit<KnownRecord, 'object' | 'deviceId'>>, at = Date.now()): void {
    this.db.transaction(() => {
      for (const r of records) this.s.upsert.run(r.cid, r.keyId, deviceId, r.seq, r.record, object)
      this.s.done.run({ cid: object, state: 'read', device: deviceId, records: records.length, error: null, at })
    }).immediate()
  }

  /** An index object of this device found in the store, not noted when it was uploaded: known as its own from now on. */
  noteOwn (object: string, deviceId: string, records: number, at = Date.now()): void {
    this.s.done.run({ cid: object, state: 'own', device: deviceId, records, error: null, at })
  }

  /**
   * Objects of `deviceId` an older cidsync read as another device's (uploaded by a run killed
   * before it noted them): its own from now on, so a compaction replaces them too.
   */
  adoptRead (deviceId: string): void {
    this.db.prepare("UPDATE content_index_objects SET state = 'own' WHERE state = 'read' AND device_id = ?").run(deviceId)
  }

  /** An index object not used: sealed under another key, or refused (with why). */
  noteSkipped (object: string, state: 'foreign-key' | 'refused', deviceId: string, error: string | null, at = Date.now()): void {
    this.s.done.run({ cid: object, state, device: deviceId, records: 0, error, at })
  }

  /** An index object that could not be fetched this time: it waits for the next pass. */
  noteTried (object: string, error: string): void {
    this.s.tried.run(error, object)
  }

  /** The newest record of `cid` under `keyId` another device's index object holds, if any. */
  known (cid: string, keyId: string): KnownRecord | undefined {
    return this.s.known.get(cid, keyId) as KnownRecord | undefined
  }

  /** Notes files recorded from another device's index object under `keyId`, not uploaded by this one. */
  noteTaken (cids: Iterable<string>, keyId: string): void {
    this.db.transaction(() => { for (const cid of cids) this.s.taken.run(cid, keyId) }).immediate()
  }

  /** The CIDs this device took from the content index under `keyId`. */
  taken (keyId: string): string[] {
    return this.s.takenOf.all(keyId) as string[]
  }

  /** How many: enough to tell whether {@link taken} changed, without reading them. */
  takenCount (keyId: string): number {
    return this.s.takenCount.get(keyId) as number
  }

  /** Index objects refused (damaged, forged, or unreadable too many times): status shows the count. */
  refusedCount (): number {
    return this.s.refused.get() as number
  }

  /**
   * Starts a fresh note of the CIDs a listing of the store holds (a table of this connection
   * alone, gone when it closes): a take checks against it without holding the listing in memory.
   */
  clearListed (): void {
    this.db.exec('CREATE TEMP TABLE IF NOT EXISTS listed_objects (cid TEXT PRIMARY KEY) WITHOUT ROWID; DELETE FROM temp.listed_objects')
  }

  /** Notes CIDs the listing holds (after {@link clearListed}). */
  noteListed (cids: readonly string[]): void {
    const insert = this.db.prepare('INSERT INTO temp.listed_objects (cid) VALUES (?) ON CONFLICT DO NOTHING')
    this.db.transaction(() => { for (const cid of cids) insert.run(cid) }).immediate()
  }

  /** Whether the last listing noted holds `cid`. */
  listed (cid: string): boolean {
    this.listedOne ??= this.db.prepare('SELECT 1 FROM temp.listed_objects WHERE cid = ?').pluck()
    return this.listedOne.get(cid) !== undefined
  }
}
