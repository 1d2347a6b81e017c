import { createDecipheriv } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { open, rename, rm, stat } from 'node:fs/promises'
import { dirname } from 'node:path'
import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createGunzip } from 'node:zlib'
import Database from 'better-sqlite3'
import { fsyncPath } from '../util/fsync.js'
import { SnapshotFormatError, SnapshotIntegrityError, SnapshotKeyError, SnapshotTooLargeError, SnapshotUnencryptedError } from '../errors.js'
import { SCHEMA_VERSION } from '../index/index.js'
import { decodeHeader, TAG_BYTES, type SnapshotHeader } from './format.js'
import { readingKey } from './key.js'

const PREFIX_BYTES = 8 + 2 + 4096

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
   * proves who made it, so a device that encrypts refuses one ({@link SnapshotUnencryptedError}).
   */
  readonly acceptUnencrypted?: boolean
}

const MIB = 1024 * 1024
/** Every snapshot may inflate to this much... */
export const MIN_INFLATE_BOUND = 64 * MIB
/** ...or this much per entry its header counts (an index row is a few hundred bytes)... */
export const INFLATE_BYTES_PER_ENTRY = 4096
/** ...or this many times its compressed size (tombstones the header does not count compress well)... */
export const INFLATE_RATIO = 64
/** ...and never more than this, whatever its header says. */
export const MAX_INFLATE_BOUND = 8 * 1024 * MIB

/** How many bytes a snapshot's body may inflate to before it is refused as a decompression bomb. */
export function inflateBound (header: SnapshotHeader, compressedBytes: number): number {
  const entries = Number.isSafeInteger(header.entries) && header.entries > 0 ? header.entries : 0
  return Math.min(MAX_INFLATE_BOUND, Math.max(MIN_INFLATE_BOUND, entries * INFLATE_BYTES_PER_ENTRY, compressedBytes * INFLATE_RATIO))
}

/** Passes bytes through until `bound` is passed, then fails before writing the chunk that passes it. */
function limit (bound: number): Transform {
  let total = 0
  return new Transform({
    transform (chunk: Buffer, _encoding, done) {
      total += chunk.byteLength
      if (total > bound) {
        done(new SnapshotTooLargeError(`the snapshot inflates past ${bound} bytes, more than its entry count and size allow: refused (a decompression bomb, or a damaged file): restore another snapshot with --cid, or put this device's index over it with \`cidsync pointer repair\``))
        return
      }
      done(null, chunk)
    }
  })
}

/** Reads only the header: what a snapshot is, without its key. */
export async function readSnapshotHeader (path: string): Promise<SnapshotHeader> {
  const handle = await open(path, 'r')
  try {
    const prefix = Buffer.alloc(PREFIX_BYTES)
    const { bytesRead } = await handle.read(prefix, 0, PREFIX_BYTES, 0)
    return decodeHeader(prefix.subarray(0, bytesRead)).header
  } finally {
    await handle.close()
  }
}

function checkDatabase (path: string): void {
  const db = new Database(path, { readonly: true, fileMustExist: true })
  try {
    const result = db.pragma('integrity_check', { simple: true })
    if (result !== 'ok') throw new SnapshotIntegrityError(`the snapshot's database is damaged (integrity_check: ${String(result)})`)
    const version = db.pragma('user_version', { simple: true }) as number
    if (version > SCHEMA_VERSION) throw new SnapshotFormatError(`the snapshot's index has schema version ${version}, newer than this cidsync's ${SCHEMA_VERSION}: upgrade cidsync`)
    db.prepare('SELECT COUNT(*) FROM entries').pluck().get()
  } catch (err) {
    if (err instanceof SnapshotIntegrityError || err instanceof SnapshotFormatError) throw err
    throw new SnapshotIntegrityError(`the snapshot's database cannot be read: ${(err as Error).message}`, { cause: err })
  } finally {
    db.close()
  }
}

/**
 * Opens a snapshot: checks its header, decrypts (the tag authenticates header and body),
 * decompresses and runs `PRAGMA integrity_check`, then moves the database into `destination`.
 * Nothing reaches `destination` unless every check passed.
 */
export async function readSnapshot (init: ReadSnapshotInit): Promise<SnapshotHeader> {
  const handle = await open(init.path, 'r')
  let header: SnapshotHeader
  let bodyOffset: number
  let headerBytes: Buffer
  let tag: Buffer | undefined
  const { size } = await stat(init.path)
  try {
    const prefix = Buffer.alloc(PREFIX_BYTES)
    const { bytesRead } = await handle.read(prefix, 0, PREFIX_BYTES, 0)
    const decoded = decodeHeader(prefix.subarray(0, bytesRead))
    header = decoded.header
    bodyOffset = decoded.bodyOffset
    headerBytes = Buffer.from(decoded.headerBytes)
    if (header.cipher === 'none' && init.acceptUnencrypted !== true) {
      throw new SnapshotUnencryptedError('the snapshot is not encrypted (cipher: none) but this device encrypts its snapshots: anyone who can write the pointer could have made it, so it is refused. ' +
        'If a device of yours publishes with encryption = "none", restore with --allow-unencrypted, or set [snapshot] accept_unencrypted = true; ' +
        'if not, `cidsync pointer repair` puts this device\'s index over it')
    }
    if (header.cipher !== 'none') {
      if (size < bodyOffset + TAG_BYTES) throw new SnapshotIntegrityError('the snapshot is cut short: its authentication tag is missing')
      tag = Buffer.alloc(TAG_BYTES)
      await handle.read(tag, 0, TAG_BYTES, size - TAG_BYTES)
    }
  } finally {
    await handle.close()
  }
  const temp = `${init.destination}.${process.pid}.restore`
  try {
    const body = createReadStream(init.path, { start: bodyOffset, end: size - (tag === undefined ? 0 : TAG_BYTES) - 1, highWaterMark: 1024 * 1024 })
    const stages: NodeJS.ReadWriteStream[] = []
    if (tag !== undefined) {
      const key = readingKey(init.stateDir, header, init.passphrase)
      stages.push(createDecipheriv('aes-256-gcm', key, Buffer.from(header.nonce, 'base64')).setAAD(headerBytes).setAuthTag(tag))
    }
    stages.push(createGunzip(), limit(inflateBound(header, size - bodyOffset)))
    try {
      await pipeline([body, ...stages, createWriteStream(temp, { mode: 0o600 })], { signal: init.signal })
    } catch (err) {
      if (init.signal?.aborted === true || err instanceof SnapshotKeyError || err instanceof SnapshotTooLargeError) throw err
      throw new SnapshotIntegrityError(`the snapshot's bytes were changed or damaged (${(err as Error).message}): refused`, { cause: err })
    }
    checkDatabase(temp)
    await fsyncPath(temp)
    await rename(temp, init.destination)
    await fsyncPath(dirname(init.destination))
    return header
  } finally {
    await rm(temp, { force: true })
  }
}
