import type Database from 'better-sqlite3'

/** One upload of an account, as its listing holds it. */
export interface ListedUpload {
  readonly id: string
  readonly cid: string
  readonly size: number
  readonly name: string
  /** When it was uploaded (ms, the service's clock). */
  readonly createdAt: number
}

/** What a delete in this process is told of the caller's walk of the listing, as `UploadsSeen` says it. */
export interface DeleteWalk {
  /** Delete only uploads made before this (ms); an object with a later one stays. */
  readonly storedBefore?: number
  /** Each walked object's uploads by id; one not named here was made since the walk, and stays. */
  readonly walked?: ReadonlyMap<string, ReadonlySet<string>>
}

/** The uploads listed a page at a time, so no statement stays open while the caller awaits. */
const PAGE = 1000

/**
 * The listing and the deletes of the embedded service's own account, in this process: what the
 * `files_uploaded` and `delete_file` routes do, without an HTTP request a page or an upload. A
 * batch of deletes is one transaction, so one commit (and one fsync) however many it deletes.
 */
export function uploadsInProcess (db: Database.Database, onDeleted: () => void): {
  readonly page: (address: string, beforeSeq: number | undefined) => { uploads: ListedUpload[], lastSeq: number | undefined }
  readonly remove: (address: string, cids: readonly string[], walk: DeleteWalk) => string[]
  readonly newest: (address: string, cid: string) => ListedUpload | undefined
} {
  const first = db.prepare('SELECT seq, id, cid, size, file_name, created_at FROM files WHERE address = ? AND deleted_at IS NULL ORDER BY seq DESC LIMIT ?')
  const next = db.prepare('SELECT seq, id, cid, size, file_name, created_at FROM files WHERE address = ? AND seq < ? AND deleted_at IS NULL ORDER BY seq DESC LIMIT ?')
  const newestOf = db.prepare('SELECT seq, id, cid, size, file_name, created_at FROM files WHERE address = ? AND cid = ? AND deleted_at IS NULL ORDER BY seq DESC LIMIT 1')
  const ofCid = db.prepare('SELECT id, created_at FROM files WHERE address = ? AND cid = ? AND deleted_at IS NULL')
  // Marked, not dropped, as the route marks it: a reclaim drops the bytes.
  const mark = db.prepare('UPDATE files SET deleted_at = ? WHERE id = ? AND address = ? AND deleted_at IS NULL')
  type Row = { seq: number, id: string, cid: string, size: number, file_name: string, created_at: number }
  const listed = (row: Row): ListedUpload => ({ id: row.id, cid: row.cid, size: row.size, name: row.file_name, createdAt: row.created_at })
  const removeAll = db.transaction((address: string, cids: readonly string[], walk: DeleteWalk): { removed: string[], marked: number } => {
    const removed: string[] = []
    let marked = 0
    const now = Date.now()
    for (const cid of new Set(cids)) {
      const known = walk.walked?.get(cid)
      let any = false
      let stays = false
      for (const row of ofCid.all(address, cid) as Array<{ id: string, created_at: number }>) {
        // Made since the walk, or since `storedBefore`: a device that stored it again relies on it.
        if ((known !== undefined && !known.has(row.id)) || (walk.storedBefore !== undefined && !(row.created_at < walk.storedBefore))) {
          stays = true
          continue
        }
        const changed = mark.run(now, row.id, address).changes > 0
        if (changed) marked++
        any ||= changed
      }
      if (any && !stays) removed.push(cid)
    }
    return { removed, marked }
  })
  return {
    page: (address, beforeSeq) => {
      const rows = (beforeSeq === undefined ? first.all(address, PAGE) : next.all(address, beforeSeq, PAGE)) as Row[]
      return {
        uploads: rows.map(listed),
        lastSeq: rows.length < PAGE ? undefined : rows[rows.length - 1]?.seq
      }
    },
    newest: (address, cid) => {
      const row = newestOf.get(address, cid) as Row | undefined
      return row === undefined ? undefined : listed(row)
    },
    remove: (address, cids, walk) => {
      const { removed, marked } = removeAll.immediate(address, cids, walk)
      if (marked > 0) onDeleted()
      return removed
    }
  }
}
