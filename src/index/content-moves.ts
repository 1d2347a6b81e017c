import type { Database, Statement } from 'better-sqlite3'

/** Where a file's record places its bytes: its CID and the objects JSON the record holds. */
export interface ContentPlace {
  readonly cid: string
  readonly objects: string
}

/** A place as {@link ContentMoves.placed} answers it: a file and its objects, as one string. */
export function placeKey (place: ContentPlace): string {
  return `${place.cid}\n${place.objects}`
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
  private prepared?: { placed: Statement, move: Statement, ensureDevice: Statement, lastSeq: Statement, setSeq: Statement }

  constructor (private readonly db: Database) {}

  private get statements (): NonNullable<ContentMoves['prepared']> {
    const db = this.db
    this.prepared ??= {
      // One probe of the primary key per place: the places are the outer loop, never the table.
      placed: db.prepare(`SELECT (p.value ->> '$.cid') || char(10) || (p.value ->> '$.objects') FROM json_each(?) p WHERE EXISTS (SELECT 1 FROM content c
        WHERE c.device_id = ? AND c.cid = p.value ->> '$.cid' AND c.objects = p.value ->> '$.objects')`).pluck(),
      // Only while the record still names what the plan read: a file stored again since keeps its newer place.
      move: db.prepare('UPDATE content SET objects = ?, stored_at = ?, seq = ? WHERE device_id = ? AND cid = ? AND objects = ?'),
      ensureDevice: db.prepare('INSERT INTO devices (device_id, hostname, first_seen) VALUES (?, ?, ?) ON CONFLICT (device_id) DO NOTHING'),
      lastSeq: db.prepare('SELECT last_seq FROM devices WHERE device_id = ?').pluck(),
      setSeq: db.prepare('UPDATE devices SET last_seq = ? WHERE device_id = ?')
    }
    return this.prepared
  }

  /** Of `places`, those this device's record names exactly now, each as {@link placeKey} gives it. */
  placed (deviceId: string, places: readonly ContentPlace[]): Set<string> {
    return new Set(this.statements.placed.all(JSON.stringify(places), deviceId) as string[])
  }

  /**
   * Moves each record that still names `from` to `to`, each with the device's next sequence number,
   * in one transaction, so the next publish carries it. Answers the moves made; the others are left.
   * Writing many moves in one transaction writes each page the records share once. The commit is
   * synced: its caller then forgets the notes of the new packs, and a power cut must not keep
   * that forgetting and lose the moves, which would leave those packs named by nothing.
   */
  move (deviceId: string, hostname: string, moves: readonly ContentMove[], now = Date.now()): Set<ContentMove> {
    const moved = new Set<ContentMove>()
    if (moves.length === 0) return moved
    const s = this.statements
    const synchronous = this.db.pragma('synchronous', { simple: true }) as number
    this.db.pragma('synchronous = FULL')
    try {
      this.db.transaction(() => {
        s.ensureDevice.run(deviceId, hostname, now)
        let seq = s.lastSeq.get(deviceId) as number
        for (const m of moves) {
          if (s.move.run(m.to, now, seq + 1, deviceId, m.cid, m.from).changes === 1) {
            seq++
            moved.add(m)
          }
        }
        if (moved.size > 0) s.setSeq.run(seq, deviceId)
      }).immediate()
    } finally {
      this.db.pragma(`synchronous = ${synchronous}`)
    }
    return moved
  }
}
