import { createCipheriv, randomBytes } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { rename, rm, writeFile } from 'node:fs/promises'
import { fsyncPath } from '../util/fsync.js'
import { dirname } from 'node:path'
import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createGzip } from 'node:zlib'
import Database from 'better-sqlite3'
import type { Database as Db } from 'better-sqlite3'
import { encodeHeader, ENGINE, FORMAT_VERSION, type SnapshotHeader } from './format.js'
import { writingKey } from './key.js'

export const DEFAULT_COMPRESSION_LEVEL = 6
/** Tables that stay on this device (job state, caches): dropped from the copy. Later migrations add to it. */
export const LOCAL_ONLY_TABLES: readonly string[] = []

export interface WriteSnapshotInit {
  /** The index's open connection: the copy is taken through it, consistent at one instant. */
  readonly db: Db
  readonly stateDir: string
  /** Where the snapshot file goes (written aside and renamed into place). */
  readonly path: string
  readonly encryption: 'aes-256-gcm' | 'none'
  readonly device: string
  readonly passphrase?: string
  readonly compressionLevel?: number
  readonly signal?: AbortSignal
}

export interface WrittenSnapshot { readonly path: string, readonly bytes: number, readonly entries: number, readonly keyId: string }

/**
 * Writes a snapshot of the index: a consistent copy (`VACUUM INTO`) without local-only tables,
 * gzip, then AES-256-GCM under an authenticated header (or no cipher, if the config says so).
 * Crash-safe: temp file, fsync, rename, fsync the directory.
 */
export async function writeSnapshot (init: WriteSnapshotInit): Promise<WrittenSnapshot> {
  const copy = `${init.path}.${process.pid}.copy.sqlite`
  const temp = `${init.path}.${process.pid}.part`
  try {
    await rm(copy, { force: true })
    // An unencrypted copy of the index: made 0600 empty first (VACUUM INTO fills an empty file).
    await writeFile(copy, '', { mode: 0o600, flag: 'wx' })
    init.db.prepare('VACUUM INTO ?').run(copy)
    const snapshotDb = new Database(copy)
    let entries: number
    try {
      for (const table of LOCAL_ONLY_TABLES) snapshotDb.exec(`DROP TABLE IF EXISTS "${table}"`)
      snapshotDb.pragma('journal_mode = DELETE')
      entries = snapshotDb.prepare('SELECT COUNT(*) FROM entries WHERE deleted = 0').pluck().get() as number
    } finally {
      snapshotDb.close()
    }
    const key = init.encryption === 'none' ? undefined : writingKey(init.stateDir, init.passphrase)
    const nonce = randomBytes(12)
    const header: SnapshotHeader = {
      format: FORMAT_VERSION,
      engine: ENGINE,
      compression: 'gzip',
      cipher: init.encryption,
      nonce: key === undefined ? '' : nonce.toString('base64'),
      keyId: key?.keyId ?? '',
      salt: key?.salt ?? '',
      createdAt: new Date().toISOString(),
      device: init.device,
      entries
    }
    const headerBytes = encodeHeader(header)
    const out = createWriteStream(temp, { mode: 0o600 })
    out.write(headerBytes)
    const stages: NodeJS.ReadWriteStream[] = [createGzip({ level: init.compressionLevel ?? DEFAULT_COMPRESSION_LEVEL })]
    const cipher = key === undefined ? undefined : createCipheriv('aes-256-gcm', key.key, nonce).setAAD(headerBytes)
    if (cipher !== undefined) {
      stages.push(cipher)
      // The tag is known only at the end: append it once the cipher is done.
      stages.push(new Transform({
        transform (chunk, _encoding, done) { done(null, chunk) },
        flush (done) { done(null, cipher.getAuthTag()) }
      }))
    }
    await pipeline([createReadStream(copy, { highWaterMark: 1024 * 1024 }), ...stages, out], { signal: init.signal })
    await fsyncPath(temp)
    await rename(temp, init.path)
    await fsyncPath(dirname(init.path))
    return { path: init.path, bytes: out.bytesWritten, entries, keyId: key?.keyId ?? '' }
  } finally {
    await rm(copy, { force: true })
    await rm(temp, { force: true })
  }
}
