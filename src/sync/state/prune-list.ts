import type Database from 'better-sqlite3'
import type { Statement } from 'better-sqlite3'
import { z } from 'zod'
import { KEY } from './keys.js'

/** Objects written a statement at a time. */
const BATCH = 1000

const checkedSchema = z.object({ deviceId: z.string(), seq: z.number().int().nonnegative() })

/**
 * `prune_list` in `sync.sqlite`: the objects of the last prune list this device read (a prune's
 * announcement of what it deletes), and how far this device's content records were checked
 * against the lists. Kept so each publish reads a list once, not once a publish.
 */
export class PruneListState {
  private readonly statements: Record<'has' | 'clear' | 'release' | 'value' | 'setValue' | 'count', Statement>

  constructor (private readonly db: Database.Database) {
    this.statements = {
      has: db.prepare('SELECT 1 FROM prune_list WHERE cid = ?').pluck(),
      clear: db.prepare('DELETE FROM prune_list'),
      release: db.prepare('DELETE FROM prune_list WHERE cid = ?'),
      count: db.prepare('SELECT COUNT(*) FROM prune_list').pluck(),
      value: db.prepare('SELECT value FROM sync_state WHERE key = ?').pluck(),
      setValue: db.prepare('INSERT INTO sync_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value')
    }
  }

  /** The CID of the list held, '' when the service had none, undefined before the first look. */
  listCid (): string | undefined {
    return this.statements.value.get(KEY.pruneList) as string | undefined
  }

  /**
   * Replaces the list held by `cid`'s objects, in one transaction. A list a prune announced ('' is
   * none) makes every record due for a full check, noted with it: a kill before the check ends
   * leaves it due.
   */
  hold (cid: string, objects: readonly string[]): void {
    this.db.transaction(() => {
      if (cid !== '') this.statements.setValue.run(KEY.pruneListChecked, JSON.stringify({ full: true }))
      this.statements.clear.run()
      for (let i = 0; i < objects.length; i += BATCH) {
        const batch = objects.slice(i, i + BATCH)
        this.db.prepare(`INSERT OR IGNORE INTO prune_list (cid) VALUES ${batch.map(() => '(?)').join(', ')}`).run(...batch)
      }
      this.statements.setValue.run(KEY.pruneList, cid)
    }).immediate()
  }

  /** Whether the list held names `object`. */
  names (object: string): boolean {
    return this.statements.has.get(object) === 1
  }

  /**
   * This device uploaded `object` after it read the list: the prune that announced the list
   * deletes only uploads made before, so a record naming it is safe from that prune.
   */
  release (object: string): void {
    this.statements.release.run(object)
  }

  /**
   * Makes every record due for a full check against the list and the listing at the next publish:
   * an index just installed may hold records a prune made stale since (those of a publish from
   * before a repack name a pack deleted since).
   */
  recheckAll (): void {
    this.statements.setValue.run(KEY.pruneListChecked, JSON.stringify({ full: true }))
  }

  /** How many objects the list held names. */
  size (): number {
    return this.statements.count.get() as number
  }

  /** This device's records were checked up to `seq` (its own sequence numbers). */
  checkedTo (deviceId: string): number {
    const text = this.statements.value.get(KEY.pruneListChecked) as string | undefined
    if (text === undefined) return 0
    try {
      const checked = checkedSchema.parse(JSON.parse(text))
      return checked.deviceId === deviceId ? checked.seq : 0
    } catch {
      return 0
    }
  }

  /** Whether every record is due for a check against the list and the listing (a new list came). */
  fullCheckDue (): boolean {
    const text = this.statements.value.get(KEY.pruneListChecked) as string | undefined
    return text !== undefined && text.includes('"full":true')
  }

  noteChecked (deviceId: string, seq: number): void {
    this.statements.setValue.run(KEY.pruneListChecked, JSON.stringify({ deviceId, seq }))
  }
}
