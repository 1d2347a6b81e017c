import type { Database, Statement } from 'better-sqlite3'

/**
 * Statements prepared once per connection, on first use, keyed by their text. SQLite prepares a
 * statement again by itself when the schema it was compiled against changes, so one that reads an
 * attached segment (`segment.entries`) serves every segment attached under that name in turn.
 */
export type Sql = (text: string) => Statement

export function statementCache (db: Database): Sql {
  const prepared = new Map<string, Statement>()
  return (text) => {
    let statement = prepared.get(text)
    if (statement === undefined) {
      statement = db.prepare(text)
      prepared.set(text, statement)
    }
    return statement
  }
}

/** The statements on `segment_chains` and `devices` the segment operations share. */
export const LAST_SEQ = 'SELECT last_seq FROM devices WHERE device_id = ?'
export const SET_CHAIN = 'INSERT INTO segment_chains (device_id, to_seq, segments) VALUES (?, ?, ?) ON CONFLICT (device_id) DO UPDATE SET to_seq = excluded.to_seq, segments = excluded.segments'
export const FORGET_CHAIN = 'DELETE FROM segment_chains WHERE device_id = ?'
