import type Database from 'better-sqlite3'

/** A pointer's row in the service's database. */
export interface PointerRow { user_id: string, namespace: string, network: string, snapshot_cid: string, engine: string, memories: number | null, updated_at: string }

/** What a user's pointer and listing read, on one open database: the routes' reads and the in-process ones alike. */
export interface AccountReads {
  /** The user's pointer row for the pair, or undefined when none was put. */
  readonly pointer: (user: string, namespace: string, network: string) => PointerRow | undefined
  /** Which of `cids` the account of the API key lists; undefined for a key it does not know. */
  readonly heldFiles: (apiKey: string, cids: ReadonlySet<string>) => Set<string> | undefined
}

export function accountReads (db: Database.Database): AccountReads {
  const current = db.prepare('SELECT * FROM pointers WHERE user_id = ? AND namespace = ? AND network = ?')
  const owner = db.prepare('SELECT address FROM api_keys WHERE key = ?').pluck()
  const listed = db.prepare('SELECT cid FROM files WHERE address = ? AND deleted_at IS NULL').pluck()
  return {
    pointer: (user, namespace, network) => current.get(user, namespace, network) as PointerRow | undefined,
    heldFiles: (apiKey, cids) => {
      const address = owner.get(apiKey) as string | undefined
      if (address === undefined) return undefined
      const held = new Set<string>()
      if (cids.size === 0) return held
      // One pass over the account's uploads, keeping only those asked.
      for (const cid of listed.iterate(address) as IterableIterator<string>) {
        if (!cids.has(cid)) continue
        held.add(cid)
        if (held.size === cids.size) break
      }
      return held
    }
  }
}

/** A pointer as the pointer route answers it. */
export function pointerRecord (row: PointerRow): Record<string, unknown> {
  return {
    userId: row.user_id,
    pointerKey: `${row.namespace}#${row.network}`,
    snapshotCid: row.snapshot_cid,
    engine: row.engine,
    namespace: row.namespace,
    network: row.network,
    ...(row.memories === null ? {} : { memories: row.memories }),
    updatedAt: row.updated_at
  }
}
