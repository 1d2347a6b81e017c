import Database from 'better-sqlite3'
import { SnapshotFormatError, SnapshotIntegrityError } from '../errors.js'
import { SCHEMA_VERSION } from './migrations.js'
import { UNSAFE_PATHS } from './unsafe-paths.js'

/** A whole index file from elsewhere (a `/1` snapshot): `PRAGMA integrity_check` and a schema this cidsync knows; a damaged or newer one is refused. */
export function checkIndexFile (path: string, check: 'integrity_check' | 'quick_check' = 'integrity_check'): void {
  const db = new Database(path, { readonly: true, fileMustExist: true })
  try {
    const result = db.pragma(check, { simple: true })
    if (result !== 'ok') throw new SnapshotIntegrityError(`the snapshot's database is damaged (${check}: ${String(result)})`)
    const version = db.pragma('user_version', { simple: true }) as number
    if (version > SCHEMA_VERSION) throw new SnapshotFormatError(`the snapshot's index has schema version ${version}, newer than this cidsync's ${SCHEMA_VERSION}: upgrade cidsync`)
    db.prepare('SELECT COUNT(*) FROM entries').pluck().get()
    // Its rows become paths on disk (restore --files, storing after a restore): none may climb out.
    const unsafe = db.prepare(UNSAFE_PATHS).pluck().get() as string | undefined
    if (unsafe !== undefined) throw new SnapshotIntegrityError(`the snapshot's index names ${JSON.stringify(unsafe.slice(0, 200))} as a file: not a path inside a folder (damaged or forged)`)
  } catch (err) {
    if (err instanceof SnapshotIntegrityError || err instanceof SnapshotFormatError) throw err
    throw new SnapshotIntegrityError(`the snapshot's database cannot be read: ${(err as Error).message}`, { cause: err })
  } finally {
    db.close()
  }
}
