import { rename, rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { fsyncPath } from '../util/fsync.js'
import { SnapshotFormatError, SnapshotIntegrityError } from '../errors.js'
import { SCHEMA_VERSION, UNSAFE_PATHS } from '../index/index.js'
import { ENGINE_V1, type SealedHeader, type SnapshotHeader } from './format.js'
import { readSealedHeader, unseal } from './sealed-file.js'

export interface ReadSnapshotInit {
  /** The snapshot file (already verified against its CID by whoever fetched it). */
  readonly path: string
  readonly stateDir: string
  /** Where the database goes once it is decrypted, decompressed and checked. */
  readonly destination: string
  readonly passphrase?: string
  readonly signal?: AbortSignal
  /**
   * Open a snapshot whose header says `cipher: none`. Off by default: without a cipher nothing
   * proves who made it, so a device that encrypts refuses one (`SnapshotUnencryptedError`).
   */
  readonly acceptUnencrypted?: boolean
}

const MIB = 1024 * 1024
/** Every body may inflate to this much... */
export const MIN_INFLATE_BOUND = 64 * MIB
/** ...or this much per entry its header counts (an index row is a few hundred bytes)... */
export const INFLATE_BYTES_PER_ENTRY = 4096
/** ...or this many times its compressed size (tombstones the header does not count compress well)... */
export const INFLATE_RATIO = 64
/** ...and never more than this, whatever its header says. */
export const MAX_INFLATE_BOUND = 8 * 1024 * MIB

/** How many bytes a body may inflate to before it is refused as a decompression bomb. */
export function inflateBound (header: SealedHeader, compressedBytes: number): number {
  const announced = 'entries' in header ? header.entries : 0
  const entries = Number.isSafeInteger(announced) && announced > 0 ? announced : 0
  return Math.min(MAX_INFLATE_BOUND, Math.max(MIN_INFLATE_BOUND, entries * INFLATE_BYTES_PER_ENTRY, compressedBytes * INFLATE_RATIO))
}

/** Reads only the header of a `/1` snapshot (a `/2` file is refused: it is not one whole index). */
export async function readSnapshotHeader (path: string): Promise<SnapshotHeader> {
  const header = await readSealedHeader(path)
  expectV1(header)
  return header as SnapshotHeader
}

function expectV1 (header: SealedHeader): void {
  if (header.engine !== ENGINE_V1) throw new SnapshotFormatError(`expected a ${ENGINE_V1} snapshot, found a ${header.engine} ${'kind' in header ? header.kind : 'file'}`)
}

/** `PRAGMA integrity_check` and a schema this cidsync knows: a damaged or newer database is refused. */
export function checkDatabase (path: string, check: 'integrity_check' | 'quick_check' = 'integrity_check'): void {
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

/**
 * Opens a `cidsync-sqlite/1` snapshot: checks its header, decrypts (the tag authenticates header
 * and body), decompresses and runs `PRAGMA integrity_check`, then moves the database into
 * `destination`. Nothing reaches `destination` unless every check passed.
 */
export async function readSnapshot (init: ReadSnapshotInit): Promise<SnapshotHeader> {
  const temp = `${init.destination}.${process.pid}.restore`
  try {
    const header = await unseal({ ...init, destination: temp, expect: expectV1, inflateBound })
    checkDatabase(temp)
    await fsyncPath(temp)
    await rename(temp, init.destination)
    await fsyncPath(dirname(init.destination))
    return header as SnapshotHeader
  } finally {
    await rm(temp, { force: true })
  }
}
