import type Database from 'better-sqlite3'
import { KEY } from './keys.js'

/** One thing to replicate: an object (by CID, uploaded under `profile`), a pointer move to a manifest, or an object a prune deleted. */
export interface ReplicaRow {
  readonly seq: number
  readonly kind: 'object' | 'pointer' | 'delete'
  readonly cid: string
  readonly profile: string
  /** When it was logged (ms). */
  readonly addedAt: number
}

/** What a mirror holds of this device's publishes, and its last drill, as recorded. */
export interface MirrorRecord {
  readonly cursor: number
  /** The last publish moved to on the mirror, and when. */
  readonly published: { readonly cid: string, readonly at: string } | null
  /** The last drill against the mirror alone (JSON as the drill answered it). */
  readonly drill: string | null
  readonly drillSuccessAt: string | null
}

/** Publishes whose history was logged, remembered: a walk stops at one of them. */
const WALKED_KEPT = 100

/** Objects skipped for a mirror: at most this many kept to try again (more are counted). */
const SKIPPED_KEPT = 10_000

/** Objects a mirror could not get because the primary would not give them, kept until copied. */
export interface SkippedObjects {
  /** How many are missing on the mirror (some past {@link SKIPPED_KEPT} may not be listed). */
  readonly count: number
  readonly items: ReadonlyArray<{ readonly cid: string, readonly profile: string, readonly message: string, readonly at: string }>
}

/**
 * The replication log in `sync.sqlite`: every object this device stores (content, segments,
 * manifests) once, and every publish's pointer after its objects, in order. Each mirror keeps a
 * cursor into it, moved only once the row is on the mirror, so a mirror down for a week, or a
 * daemon killed mid-copy, resumes where it was: nothing is held in memory that a restart loses.
 * A mirror added later starts at the beginning and copies everything logged.
 */
export class MirrorLog {
  private readonly s: Record<'has' | 'insert' | 'lastPointer' | 'after' | 'state' | 'ensure' | 'cursor' | 'published' | 'drill' | 'behind' | 'laterPointer' | 'lastSeq' | 'stateValue' | 'setStateValue' | 'deletedLater', Database.Statement>

  constructor (private readonly db: Database.Database) {
    this.s = {
      // Logged, and not deleted by a prune since: an object stored again after a prune is logged again.
      has: db.prepare("SELECT kind = 'object' FROM replica_log WHERE cid = ? AND kind IN ('object', 'delete') ORDER BY seq DESC LIMIT 1").pluck(),
      insert: db.prepare('INSERT INTO replica_log (kind, cid, profile, added_at) VALUES (?, ?, ?, ?)'),
      lastPointer: db.prepare("SELECT cid FROM replica_log WHERE kind = 'pointer' ORDER BY seq DESC LIMIT 1").pluck(),
      after: db.prepare('SELECT seq, kind, cid, profile, added_at AS addedAt FROM replica_log WHERE seq > ? ORDER BY seq LIMIT ?'),
      state: db.prepare('SELECT cursor, published, drill, drill_success AS drillSuccessAt FROM mirror_state WHERE mirror = ?'),
      ensure: db.prepare('INSERT INTO mirror_state (mirror) VALUES (?) ON CONFLICT (mirror) DO NOTHING'),
      cursor: db.prepare('UPDATE mirror_state SET cursor = MAX(cursor, ?) WHERE mirror = ?'),
      published: db.prepare('UPDATE mirror_state SET published = ? WHERE mirror = ?'),
      drill: db.prepare('UPDATE mirror_state SET drill = ?, drill_success = COALESCE(?, drill_success) WHERE mirror = ?'),
      // A pointer row repeated after content that came in later (logContent) is one publish, and none once the mirror holds it.
      // An object a prune deleted later is not waited for: the mirror skips it.
      behind: db.prepare("SELECT COUNT(*) FILTER (WHERE kind = 'object' AND NOT EXISTS (SELECT 1 FROM replica_log d WHERE d.cid = replica_log.cid AND d.kind = 'delete' AND d.seq > replica_log.seq)) AS objects, COUNT(DISTINCT cid) FILTER (WHERE kind = 'pointer' AND cid != ?) AS pointers, MIN(added_at) AS oldest FROM replica_log WHERE seq > ?"),
      laterPointer: db.prepare("SELECT 1 FROM replica_log WHERE kind = 'pointer' AND seq > ? LIMIT 1").pluck(),
      deletedLater: db.prepare("SELECT 1 FROM replica_log WHERE cid = ? AND kind = 'delete' AND seq > ? LIMIT 1").pluck(),
      lastSeq: db.prepare('SELECT COALESCE(MAX(seq), 0) FROM replica_log').pluck(),
      stateValue: db.prepare('SELECT value FROM sync_state WHERE key = ?').pluck(),
      setStateValue: db.prepare('INSERT INTO sync_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value')
    }
  }

  /** Objects stored on the primary (each logged once, whoever logs it again). */
  logObjects (objects: ReadonlyArray<{ readonly cid: string, readonly profile: string }>, at = Date.now()): void {
    this.db.transaction(() => {
      for (const o of objects) if (this.s.has.get(o.cid) !== 1) this.s.insert.run('object', o.cid, o.profile, at)
    }).immediate()
  }

  /**
   * Objects a prune is about to delete from the primary, noted before it asks: a kill between its
   * delete and {@link logDeletes} leaves them here, and the next prune logs those the primary lost.
   */
  noteDeleting (cids: readonly string[]): void {
    this.db.transaction(() => {
      this.s.setStateValue.run(KEY.pruneDeleting, JSON.stringify([...new Set([...this.deleting(), ...cids])]))
    }).immediate()
  }

  /** What a prune noted it was deleting and never logged (a kill cut it short). */
  deleting (): string[] {
    try {
      const parsed = JSON.parse(this.s.stateValue.get(KEY.pruneDeleting) as string | undefined ?? '[]') as unknown
      return Array.isArray(parsed) ? parsed.filter((c): c is string => typeof c === 'string') : []
    } catch {
      return []
    }
  }

  /**
   * Objects a prune deleted from the primary: each mirror deletes them too, in log order. They,
   * and the rest of what it `asked` for (refused, or gone before it asked), are no longer being deleted.
   */
  logDeletes (cids: readonly string[], at = Date.now(), asked: readonly string[] = cids): void {
    this.db.transaction(() => {
      for (const cid of cids) this.s.insert.run('delete', cid, '', at)
      this.settleDeleting([...cids, ...asked])
    }).immediate()
  }

  /** Objects noted as being deleted that the primary still holds: not deleted, nothing to log. */
  settleDeleting (cids: readonly string[]): void {
    const done = new Set(cids)
    const left = this.deleting().filter(c => !done.has(c))
    this.s.setStateValue.run(KEY.pruneDeleting, JSON.stringify(left))
  }

  /** A publish: the objects a restore of it needs (segments, then the manifest), then the pointer move. */
  logPublish (manifestCid: string, segments: readonly string[], profile: string, at = Date.now()): void {
    this.db.transaction(() => {
      this.logObjects([...segments, manifestCid].map(cid => ({ cid, profile })), at)
      if (this.s.lastPointer.get() !== manifestCid) this.s.insert.run('pointer', manifestCid, profile, at)
    }).immediate()
  }

  /** How far each device's content records in the index were logged (`logContent`): its sequence number, by device ID. */
  contentSeen (): Readonly<Record<string, number>> {
    const json = this.s.stateValue.get(KEY.mirrorContentSeen) as string | undefined
    if (json === undefined) return {}
    try {
      return JSON.parse(json) as Record<string, number>
    } catch {
      // Read again from the start: each object is logged once whatever happens.
      return {}
    }
  }

  /**
   * Content objects named by the index's records (any device's), and how far each device's
   * records were read, in one transaction. When any object was new, the last publish's pointer
   * row is logged again after them: a mirror moves its pointer (or confirms it) only once the
   * content that publish's index names is there too. Answers how many objects were new.
   */
  logContent (objects: ReadonlyArray<{ readonly cid: string, readonly profile: string }>, seen: Readonly<Record<string, number>>, at = Date.now()): number {
    return this.db.transaction(() => {
      const added = this.logNew(objects, at)
      this.s.setStateValue.run(KEY.mirrorContentSeen, JSON.stringify(seen))
      return added
    }).immediate()
  }

  /** The last publish logged (its pointer move), or undefined before any. */
  lastPointer (): string | undefined {
    return this.s.lastPointer.get() as string | undefined
  }

  /** The publishes whose whole history was logged (`logHistory`), the last few. */
  historyWalked (): readonly string[] {
    try {
      return JSON.parse(this.s.stateValue.get(KEY.mirrorHistoryWalked) as string | undefined ?? '[]') as string[]
    } catch {
      return []
    }
  }

  /**
   * The publishes of the history behind `head` and their segments, each object once, and `head`
   * noted as walked, in one transaction; when any was new, the last pointer row again after them.
   */
  logHistory (objects: ReadonlyArray<{ readonly cid: string, readonly profile: string }>, head: string, at = Date.now()): number {
    return this.db.transaction(() => {
      const added = this.logNew(objects, at)
      this.s.setStateValue.run(KEY.mirrorHistoryWalked, JSON.stringify([...this.historyWalked().filter(c => c !== head), head].slice(-WALKED_KEPT)))
      return added
    }).immediate()
  }

  /** Objects not logged yet, then (when any was) the last pointer row again after them. */
  private logNew (objects: ReadonlyArray<{ readonly cid: string, readonly profile: string }>, at: number): number {
    let added = 0
    for (const o of objects) {
      if (this.s.has.get(o.cid) !== undefined) continue
      this.s.insert.run('object', o.cid, o.profile, at)
      added++
    }
    const pointer = this.s.lastPointer.get() as string | undefined
    if (added > 0 && pointer !== undefined) this.s.insert.run('pointer', pointer, this.profileOf(pointer), at)
    return added
  }

  private profileOf (cid: string): string {
    return (this.db.prepare("SELECT profile FROM replica_log WHERE cid = ? AND kind = 'pointer' ORDER BY seq DESC LIMIT 1").pluck().get(cid) as string | undefined) ?? 'kubo-cidv1'
  }

  /** The rows after `seq`, oldest first. */
  after (seq: number, limit: number): ReplicaRow[] {
    return this.s.after.all(seq, limit) as ReplicaRow[]
  }

  /** Whether a pointer move was logged after `seq` (an older one need not be made on its own). */
  pointerAfter (seq: number): boolean {
    return this.s.laterPointer.get(seq) !== undefined
  }

  /** Whether a prune deleted `cid` after row `seq`: a mirror behind need not copy it (a later store logs it again). */
  deletedAfter (cid: string, seq: number): boolean {
    return this.s.deletedLater.get(cid, seq) !== undefined
  }

  lastSeq (): number {
    return this.s.lastSeq.get() as number
  }

  /** The mirror's record (at cursor 0 before anything was copied to it). Only reads: status asks often. */
  mirror (name: string): MirrorRecord {
    const row = (this.s.state.get(name) as { cursor: number, published: string | null, drill: string | null, drillSuccessAt: string | null } | undefined) ??
      { cursor: 0, published: null, drill: null, drillSuccessAt: null }
    return { cursor: row.cursor, published: row.published === null ? null : JSON.parse(row.published) as MirrorRecord['published'], drill: row.drill, drillSuccessAt: row.drillSuccessAt }
  }

  /** What the mirror has not copied yet: objects, pointer moves, and since when the oldest waits (ms), or null. */
  behind (name: string): { readonly objects: number, readonly pointers: number, readonly oldestAt: number | null } {
    const record = this.mirror(name)
    const row = this.s.behind.get(record.published?.cid ?? '', record.cursor) as { objects: number, pointers: number, oldest: number | null }
    return { objects: row.objects, pointers: row.pointers, oldestAt: row.oldest }
  }

  /** The mirror holds every row up to `seq`. */
  advance (name: string, seq: number): void {
    this.s.ensure.run(name)
    this.s.cursor.run(seq, name)
  }

  /** The mirror's pointer now names `cid`, and the rows up to `seq` are on it (one transaction). */
  notePublished (name: string, cid: string, seq: number, at = new Date()): void {
    this.db.transaction(() => {
      this.advance(name, seq)
      this.s.published.run(JSON.stringify({ cid, at: at.toISOString() }), name)
    }).immediate()
  }

  /** What the mirror lacks because the primary would not give it (kept across restarts: never "caught up" meanwhile). */
  skipped (name: string): SkippedObjects {
    const json = this.s.stateValue.get(`${KEY.mirrorSkipped}/${name}`) as string | undefined
    try {
      return json === undefined ? { count: 0, items: [] } : JSON.parse(json) as SkippedObjects
    } catch {
      return { count: 0, items: [] }
    }
  }

  /** An object skipped for the mirror (its cursor moves past it, so the rest goes on); tried again later. */
  noteSkipped (name: string, object: { readonly cid: string, readonly profile: string }, message: string, at = new Date()): void {
    this.db.transaction(() => {
      const now = this.skipped(name)
      if (now.items.some(i => i.cid === object.cid)) return
      const kept = now.items.length < SKIPPED_KEPT
      const items = kept ? [...now.items, { cid: object.cid, profile: object.profile, message: message.slice(0, 500), at: at.toISOString() }] : now.items
      this.s.setStateValue.run(`${KEY.mirrorSkipped}/${name}`, JSON.stringify({ count: now.count + 1, items }))
    }).immediate()
  }

  /** A skipped object is on the mirror now. */
  unskip (name: string, cid: string): void {
    this.db.transaction(() => {
      const now = this.skipped(name)
      const items = now.items.filter(i => i.cid !== cid)
      if (items.length === now.items.length) return
      this.s.setStateValue.run(`${KEY.mirrorSkipped}/${name}`, JSON.stringify({ count: Math.max(0, now.count - 1), items }))
    }).immediate()
  }

  /** A drill against the mirror alone: its result (JSON), and when it last succeeded. */
  noteDrill (name: string, result: string, succeededAt: string | null): void {
    this.s.ensure.run(name)
    this.s.drill.run(result, succeededAt, name)
  }
}
