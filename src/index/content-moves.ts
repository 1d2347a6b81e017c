import type { Database, Statement } from 'better-sqlite3'

/** Where a file's record places its bytes: its CID and the objects JSON the record holds. */
export interface ContentPlace {
  readonly cid: string
  readonly objects: string
}

/** One file's record moved by a repack: from the objects its plan read to where its bytes lie now. */
export interface ContentMove {
  readonly cid: string
  /** The objects JSON the record held when the move was planned. */
  readonly from: string
  /** The objects JSON it holds once moved. */
  readonly to: string
}

/**
 * A repack's reads and writes of one device's content records, by the table's primary key. A
 * device holds at most one record of a file, so each file is one probe: no sort across devices,
 * and no second read of a record before it is moved.
 */
export class ContentMoves {
  private prepared?: { placed: Statement, move: Statement, lastSeq: Statement, setSeq: Statement }

  constructor (private readonly db: Database) {}

  private get statements (): NonNullable<ContentMoves['prepared']> {
    const db = this.db
    this.prepared ??= {
      // One probe of the primary key per place: the places are the outer loop, never the table.
      placed: db.prepare(`SELECT p.value ->> '$.cid' FROM json_each(?) p WHERE EXISTS (SELECT 1 FROM content c
        WHERE c.device_id = ? AND c.cid = p.value ->> '$.cid' AND c.objects = p.value ->> '$.objects')`).pluck(),
      // Only while the record still names what the plan read: a file stored again since keeps its newer place.
      move: db.prepare('UPDATE content SET objects = ?, stored_at = ?, seq = ? WHERE device_id = ? AND cid = ? AND objects = ?'),
      lastSeq: db.prepare('SELECT last_seq FROM devices WHERE device_id = ?').pluck(),
      setSeq: db.prepare('UPDATE devices SET last_seq = ? WHERE device_id = ?')
    }
    return this.prepared
  }

  /** The CIDs of `places` whose record of this device names exactly those objects now. */
  placed (deviceId: string, places: readonly ContentPlace[]): Set<string> {
    return new Set(this.statements.placed.all(JSON.stringify(places), deviceId) as string[])
  }

  /**
   * Moves each record that still names `from` to `to`, each with the device's next sequence number,
   * in one transaction, so the next publish carries it. Answers the CIDs moved; the others are left.
   * Writing many moves in one transaction writes each page the records share once.
   */
  move (deviceId: string, moves: readonly ContentMove[], now = Date.now()): Set<string> {
    const moved = new Set<string>()
    if (moves.length === 0) return moved
    const s = this.statements
    this.db.transaction(() => {
      let seq = (s.lastSeq.get(deviceId) as number | undefined) ?? 0
      for (const m of moves) {
        if (s.move.run(m.to, now, seq + 1, deviceId, m.cid, m.from).changes === 1) {
          seq++
          moved.add(m.cid)
        }
      }
      if (moved.size > 0) s.setSeq.run(seq, deviceId)
    }).immediate()
    return moved
  }
}
