import { rm, writeFile } from 'node:fs/promises'
import Database from 'better-sqlite3'
import { ENGINE_V1 } from './format.js'
import { seal } from './sealed-file.js'

export interface WriteSnapshotInit {
  /** The open index: the copy is taken through it (`Index.copyTo`), consistent at one instant. */
  readonly index: { copyTo: (path: string) => void }
  readonly stateDir: string
  /** Where the snapshot file goes (written aside and renamed into place). */
  readonly path: string
  readonly encryption: 'aes-256-gcm' | 'none'
  readonly device: string
  readonly passphrase?: string
  readonly signal?: AbortSignal
}

export interface WrittenSnapshot { readonly path: string, readonly bytes: number, readonly entries: number, readonly keyId: string }

/**
 * Writes a `cidsync-sqlite/1` snapshot: one sealed copy of the whole index. Publishes write `/2`
 * segments and manifests. This serves `cidsync pointer put` of an old-style file, the tests that
 * prove `/1` pointers are still restored and carried forward, and the benchmark baseline.
 */
export async function writeSnapshot (init: WriteSnapshotInit): Promise<WrittenSnapshot> {
  const copy = `${init.path}.${process.pid}.copy.sqlite`
  try {
    await rm(copy, { force: true })
    // An unencrypted copy of the index: made 0600 empty first (VACUUM INTO fills an empty file).
    await writeFile(copy, '', { mode: 0o600, flag: 'wx' })
    init.index.copyTo(copy)
    const db = new Database(copy)
    let entries: number
    try {
      db.pragma('journal_mode = DELETE')
      entries = db.prepare('SELECT COUNT(*) FROM entries WHERE deleted = 0').pluck().get() as number
    } finally {
      db.close()
    }
    const sealed = await seal({
      path: init.path,
      header: { format: 1, engine: ENGINE_V1, compression: 'gzip', createdAt: new Date().toISOString(), device: init.device, entries },
      body: { file: copy },
      encryption: init.encryption,
      stateDir: init.stateDir,
      passphrase: init.passphrase,
      signal: init.signal
    })
    return { path: init.path, bytes: sealed.bytes, entries, keyId: sealed.header.keyId }
  } finally {
    await rm(copy, { force: true })
  }
}
