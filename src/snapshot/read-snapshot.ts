import { rename, rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import { fsyncPath } from '../util/fsync.js'
import { SnapshotFormatError } from '../errors.js'
import { ENGINE_V1, type SealedHeader, type SnapshotHeader } from './format.js'
import { readSealedHeader, unseal } from './sealed-file.js'
import { inflateBound } from './size-bounds.js'

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
  /** Checks the database before it is put in place (the index room's check: a damaged or newer one throws). */
  readonly check: (database: string) => void
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


/**
 * Opens a `cidsync-sqlite/1` snapshot: checks its header, decrypts (the tag authenticates header
 * and body), decompresses and runs `PRAGMA integrity_check`, then moves the database into
 * `destination`. Nothing reaches `destination` unless every check passed.
 */
export async function readSnapshot (init: ReadSnapshotInit): Promise<SnapshotHeader> {
  const temp = `${init.destination}.${process.pid}.restore`
  try {
    const header = await unseal({ ...init, destination: temp, expect: expectV1, inflateBound })
    init.check(temp)
    await fsyncPath(temp)
    await rename(temp, init.destination)
    await fsyncPath(dirname(init.destination))
    return header as SnapshotHeader
  } finally {
    await rm(temp, { force: true })
  }
}
