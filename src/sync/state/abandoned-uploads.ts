import type Database from 'better-sqlite3'
import type { Statement } from 'better-sqlite3'

/**
 * What an abandoned upload was: a publish attempt's manifest or segment, a prune's list the list
 * pointer never named, a repack's new pack before its records (`pack`), or one a later repack
 * finished without recording (`pack-left`).
 */
export type AbandonedKind = 'manifest' | 'segment' | 'list' | 'pack' | 'pack-left'

/** One object a publish uploaded and then left: no chain names it. */
export interface AbandonedUpload {
  readonly cid: string
  readonly kind: AbandonedKind
}

/**
 * `abandoned_uploads` in `sync.sqlite`: the manifest and segments of a publish attempt this device
 * uploaded and then left, because another device published first (its rows merged, the attempt
 * made again) or too many did; a prune's list, from before its upload until the list pointer
 * names it; a repack's new pack, from before its upload until its moves are recorded. No chain
 * names them, so no forget ever replaces them: a prune takes them as candidates, and they go as
 * any dead object does, past the margin and when nothing kept names them (a later attempt may
 * have uploaded the same bytes).
 */
export class AbandonedUploads {
  private readonly statements: Record<'note' | 'all' | 'forget' | 'packsBefore' | 'relabel', Statement>

  constructor (private readonly db: Database.Database) {
    this.statements = {
      note: db.prepare('INSERT INTO abandoned_uploads (cid, kind, noted_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING'),
      all: db.prepare('SELECT cid, kind FROM abandoned_uploads ORDER BY noted_at, cid'),
      forget: db.prepare('DELETE FROM abandoned_uploads WHERE cid = ?'),
      packsBefore: db.prepare("SELECT cid FROM abandoned_uploads WHERE kind = 'pack' AND noted_at < ? ORDER BY cid").pluck(),
      relabel: db.prepare('UPDATE abandoned_uploads SET kind = ? WHERE cid = ?')
    }
  }

  /** Notes `uploads`; call inside the transaction that leaves the attempt, so a kill loses neither. */
  note (uploads: readonly AbandonedUpload[], at = Date.now()): void {
    for (const upload of uploads) this.statements.note.run(upload.cid, upload.kind, at)
  }

  all (): AbandonedUpload[] {
    return this.statements.all.all() as AbandonedUpload[]
  }

  /** The new packs of repacks begun before `at` (ms) still waiting for their records. */
  packsNotedBefore (at: number): string[] {
    return this.statements.packsBefore.all(at) as string[]
  }

  /** Notes `cids`, already noted, as `kind` now. */
  relabel (cids: readonly string[], kind: AbandonedKind): void {
    this.db.transaction(() => { for (const cid of cids) this.statements.relabel.run(kind, cid) }).immediate()
  }

  /** Drops objects there is nothing left to do for: deleted, never stored, or named by a chain kept. */
  forget (cids: readonly string[]): void {
    this.db.transaction(() => { for (const cid of cids) this.statements.forget.run(cid) }).immediate()
  }
}
