import type { Database, Statement } from 'better-sqlite3'

/** An upload as the listing gave it. */
export interface RemoteFile { readonly id: string, readonly cid: string, readonly fileName: string, readonly size: number, readonly sentForDeal: string, readonly createdAt: number | undefined }
export interface RemoteName { readonly ipnsName: string, readonly ipnsId: string, readonly cid: string, readonly lastUpdate: number | undefined }
export interface DealRecord { readonly cid: string, readonly requestedAt: number, readonly dealId: number | null, readonly provider: string | null, readonly status: string | null }

/** Where a local file stands on the account's side, by its CID. */
export type RemoteState = 'local-only' | 'stored' | 'sent-for-deal'

/** How long a deal may take in production before it is overdue. */
export const DEAL_OVERDUE_MS = 2 * 86_400_000

/**
 * The account's side of the index: the uploads listing, IPNS names and the deals this device asked
 * for, mirrored by reconciliation and cross-referenced with local files by CID.
 */
export class RemoteStore {
  private readonly s: Record<'upsertFile' | 'markGone' | 'clearNames' | 'insertName' | 'requestDeal' | 'pendingDeals' | 'recordDeal' | 'counts' | 'dealCounts' | 'stateOf' | 'nameOf', Statement>

  constructor (private readonly db: Database) {
    this.s = {
      upsertFile: db.prepare(`INSERT INTO remote_files (id, cid, file_name, size, sent_for_deal, created_at, seen_at, gone) VALUES (?, ?, ?, ?, ?, ?, ?, 0)
        ON CONFLICT (id) DO UPDATE SET cid = excluded.cid, file_name = excluded.file_name, size = excluded.size, sent_for_deal = excluded.sent_for_deal, seen_at = excluded.seen_at, gone = 0`),
      markGone: db.prepare('UPDATE remote_files SET gone = 1 WHERE seen_at < ? AND gone = 0'),
      clearNames: db.prepare('DELETE FROM remote_names'),
      insertName: db.prepare('INSERT INTO remote_names (ipns_name, ipns_id, cid, last_update, seen_at) VALUES (?, ?, ?, ?, ?)'),
      requestDeal: db.prepare('INSERT INTO deals (cid, requested_at, device_id) VALUES (?, ?, ?) ON CONFLICT (cid) DO NOTHING'),
      pendingDeals: db.prepare('SELECT cid, requested_at AS requestedAt, deal_id AS dealId, provider, status FROM deals WHERE deal_id IS NULL AND device_id = ?'),
      recordDeal: db.prepare('UPDATE deals SET deal_id = ?, provider = ?, status = ?, checked_at = ? WHERE cid = ?'),
      counts: db.prepare('SELECT COUNT(*) FILTER (WHERE gone = 0) AS live, COUNT(*) FILTER (WHERE gone = 1) AS gone FROM remote_files'),
      dealCounts: db.prepare('SELECT COUNT(*) FILTER (WHERE deal_id IS NULL) AS pending, COUNT(*) FILTER (WHERE deal_id IS NULL AND requested_at < ?) AS overdue, COUNT(*) FILTER (WHERE deal_id IS NOT NULL) AS made FROM deals WHERE device_id = ?'),
      stateOf: db.prepare("SELECT MAX(CASE WHEN sent_for_deal = 'yes' THEN 2 ELSE 1 END) FROM remote_files WHERE cid = ? AND gone = 0").pluck(),
      nameOf: db.prepare('SELECT cid FROM remote_names WHERE ipns_name = ?').pluck()
    }
  }

  /** One page of the listing, in one transaction, stamped with the run it belongs to. */
  savePage (files: readonly RemoteFile[], run: number): void {
    this.db.transaction(() => {
      for (const f of files) this.s.upsertFile.run(f.id, f.cid, f.fileName, f.size, f.sentForDeal, f.createdAt ?? null, run)
    })()
  }

  /** After a complete listing: what the run did not see is gone from the account. Answers how many. */
  markGoneBefore (run: number): number {
    return this.s.markGone.run(run).changes
  }

  replaceNames (names: readonly RemoteName[], run: number): void {
    this.db.transaction(() => {
      this.s.clearNames.run()
      for (const n of names) this.s.insertName.run(n.ipnsName, n.ipnsId, n.cid, n.lastUpdate ?? null, run)
    })()
  }

  nameTarget (ipnsName: string): string | undefined {
    return this.s.nameOf.get(ipnsName) as string | undefined
  }

  requestDeal (cid: string, deviceId: string, at = Date.now()): void {
    this.s.requestDeal.run(cid, at, deviceId)
  }

  pendingDeals (deviceId: string): DealRecord[] {
    return this.s.pendingDeals.all(deviceId) as DealRecord[]
  }

  recordDeal (cid: string, dealId: number, provider: string | undefined, status: string | undefined): void {
    this.s.recordDeal.run(dealId, provider ?? null, status ?? null, Date.now(), cid)
  }

  counts (deviceId: string, now = Date.now()): { remoteFiles: number, gone: number, dealsPending: number, dealsOverdue: number, dealsMade: number } {
    const files = this.s.counts.get() as { live: number, gone: number }
    const deals = this.s.dealCounts.get(now - DEAL_OVERDUE_MS, deviceId) as { pending: number, overdue: number, made: number }
    return { remoteFiles: files.live, gone: files.gone, dealsPending: deals.pending, dealsOverdue: deals.overdue, dealsMade: deals.made }
  }

  /**
   * How many of a device's live files stand where on the account's side (as `stateOf` says per
   * file), counted in one pass: a join over every entry, so it is run after a reconciliation, not
   * per status request.
   */
  fileStates (deviceId: string): { localOnly: number, stored: number, sentForDeal: number } {
    // A file whose content is stored sealed (or packed) is never an upload under its own CID: a
    // content record holding it counts it stored, or the dashboard said "local only" of every
    // file `cidsync ls` and the Content section showed as stored.
    const row = this.db.prepare(`WITH r AS (SELECT cid, MAX(CASE WHEN sent_for_deal = 'yes' THEN 2 ELSE 1 END) AS s FROM remote_files WHERE gone = 0 GROUP BY cid),
      f AS (SELECT COALESCE(r.s, CASE WHEN EXISTS (SELECT 1 FROM content c WHERE c.cid = e.cid) THEN 1 END) AS s
        FROM entries e LEFT JOIN r ON r.cid = e.cid WHERE e.device_id = ? AND e.deleted = 0)
      SELECT COUNT(*) FILTER (WHERE s IS NULL) AS localOnly, COUNT(*) FILTER (WHERE s = 1) AS stored, COUNT(*) FILTER (WHERE s = 2) AS sentForDeal FROM f`).get(deviceId) as { localOnly: number, stored: number, sentForDeal: number }
    return row
  }

  /**
   * Where the deal this device asked for a CID stands: `made`, `pending`, `overdue` (pending for
   * more than two days), or `none` (not asked for here: another device's publish, or deals off).
   */
  dealState (cid: string, now = Date.now()): 'made' | 'pending' | 'overdue' | 'none' {
    this.dealOf ??= this.db.prepare('SELECT deal_id AS dealId, requested_at AS requestedAt FROM deals WHERE cid = ?')
    const deal = this.dealOf.get(cid) as { dealId: number | null, requestedAt: number } | undefined
    if (deal === undefined) return 'none'
    if (deal.dealId !== null) return 'made'
    return deal.requestedAt < now - DEAL_OVERDUE_MS ? 'overdue' : 'pending'
  }

  private dealOf: Statement | undefined

  /**
   * Takes the account's side from another index file (the one a restore replaces): the deals this
   * device asked for are known nowhere else, and the mirrored listing and names spare a wait for
   * the next reconciliation. Rows already here win. Answers how many deals came over.
   */
  carryFrom (otherIndexPath: string): number {
    this.db.prepare('ATTACH DATABASE ? AS carried').run(otherIndexPath)
    try {
      return this.db.transaction(() => {
        this.db.exec(`INSERT OR IGNORE INTO remote_files (id, cid, file_name, size, sent_for_deal, created_at, seen_at, gone)
            SELECT id, cid, file_name, size, sent_for_deal, created_at, seen_at, gone FROM carried.remote_files;
          INSERT OR IGNORE INTO remote_names (ipns_name, ipns_id, cid, last_update, seen_at)
            SELECT ipns_name, ipns_id, cid, last_update, seen_at FROM carried.remote_names`)
        return this.db.prepare(`INSERT OR IGNORE INTO deals (cid, requested_at, device_id, deal_id, provider, status, checked_at)
          SELECT cid, requested_at, device_id, deal_id, provider, status, checked_at FROM carried.deals`).run().changes
      })()
    } finally {
      this.db.exec('DETACH DATABASE carried')
    }
  }

  /** Where a CID stands on the account's side. */
  stateOf (cid: string | null): RemoteState {
    if (cid === null) return 'local-only'
    const state = this.s.stateOf.get(cid) as number | null
    return state === 2 ? 'sent-for-deal' : state === 1 ? 'stored' : 'local-only'
  }
}
