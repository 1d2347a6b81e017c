import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs'
import { open, rename, rm, stat } from 'node:fs/promises'
import { dirname } from 'node:path'
import { Readable, Transform, type Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { constants, createBrotliCompress, createBrotliDecompress, createGunzip, createGzip } from 'node:zlib'
import { SnapshotIntegrityError, SnapshotKeyError, SnapshotTooLargeError, SnapshotUnencryptedError, StateWriteError } from '../errors.js'
import { fsyncPath } from '../util/fsync.js'
import { streamClosed } from '../util/stream-closed.js'
import { decodeHeader, encodeHeader, PREFIX_BYTES, TAG_BYTES, type SealedHeader, type UnsealedHeader } from './format.js'
import { readingKey, writingKey } from './key.js'

/** gzip level of `/1` snapshots (kept for writing them in tests and tools). */
export const GZIP_LEVEL = 6
/**
 * Brotli quality of `/2` files: on an index copy, quality 3 is smaller than gzip -6 in about its
 * time. Higher qualities cost far more time for a little size (docs/benchmarks.md, "Publishing
 * `cidsync-sqlite/2`" and "Figures behind the code's comments").
 */
export const BROTLI_QUALITY = 3
const BUFFER = 1024 * 1024

export interface SealInit {
  /** Where the sealed file goes (written aside, fsynced, renamed into place). */
  readonly path: string
  readonly header: UnsealedHeader
  /** The body before compression: a file's path, or the bytes. */
  readonly body: { readonly file: string } | { readonly bytes: Buffer }
  readonly encryption: 'aes-256-gcm' | 'none'
  readonly stateDir: string
  readonly passphrase?: string
  readonly signal?: AbortSignal
}

export interface Sealed { readonly path: string, readonly bytes: number, readonly header: SealedHeader }

/** Compresses and encrypts a body under an authenticated header. Crash-safe: temp file, fsync, rename, fsync the directory. */
export async function seal (init: SealInit): Promise<Sealed> {
  const key = init.encryption === 'none' ? undefined : writingKey(init.stateDir, init.passphrase)
  const nonce = randomBytes(12)
  const header = {
    ...init.header,
    cipher: init.encryption,
    nonce: key === undefined ? '' : nonce.toString('base64'),
    keyId: key?.keyId ?? '',
    salt: key?.salt ?? ''
  } as SealedHeader
  const headerBytes = encodeHeader(header)
  const temp = `${init.path}.${process.pid}.part`
  let out: WriteStream | undefined
  try {
    out = createWriteStream(temp, { mode: 0o600 })
    out.write(headerBytes)
    const stages: NodeJS.ReadWriteStream[] = [header.compression === 'gzip'
      ? createGzip({ level: GZIP_LEVEL })
      : createBrotliCompress({ params: { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY } })]
    if (key !== undefined) {
      const cipher = createCipheriv('aes-256-gcm', key.key, nonce).setAAD(headerBytes)
      // The tag is known only at the end: append it once the cipher is done.
      stages.push(cipher, new Transform({
        transform (chunk, _encoding, done) { done(null, chunk) },
        flush (done) { done(null, cipher.getAuthTag()) }
      }))
    }
    const source = 'file' in init.body ? createReadStream(init.body.file, { highWaterMark: BUFFER }) : Readable.from([init.body.bytes])
    await pipeline([source, ...stages, out], { signal: init.signal })
    await fsyncPath(temp)
    await rename(temp, init.path)
    await fsyncPath(dirname(init.path))
    return { path: init.path, bytes: out.bytesWritten, header }
  } finally {
    if (out !== undefined) await streamClosed(out)
    await rm(temp, { force: true })
  }
}

/** Reads only the header: what a sealed file is, without its key. */
export async function readSealedHeader (path: string): Promise<SealedHeader> {
  const handle = await open(path, 'r')
  try {
    const prefix = Buffer.alloc(PREFIX_BYTES)
    const { bytesRead } = await handle.read(prefix, 0, PREFIX_BYTES, 0)
    return decodeHeader(prefix.subarray(0, bytesRead)).header
  } finally {
    await handle.close()
  }
}

export interface UnsealInit {
  /** The sealed file (already verified against its CID by whoever fetched it). */
  readonly path: string
  readonly stateDir: string
  /** Where the body goes once decrypted and decompressed (renamed into place only then). */
  readonly destination: string
  readonly passphrase?: string
  /**
   * Open a file whose header says `cipher: none`. Off by default: without a cipher nothing proves
   * who made it, so a device that encrypts refuses one ({@link SnapshotUnencryptedError}).
   */
  readonly acceptUnencrypted?: boolean
  /** Checks the header before any key or byte of the body is touched (throws to refuse). */
  readonly expect?: (header: SealedHeader) => void
  /** The most the body may inflate to, given the header and the compressed size. */
  readonly inflateBound: (header: SealedHeader, compressedBytes: number) => number
  readonly signal?: AbortSignal
}

/**
 * Opens a sealed file: checks its header, decrypts (the tag authenticates header and body) and
 * decompresses into `destination`, never past `inflateBound`. Nothing reaches `destination`
 * unless the tag verified; what the body means is the caller's to check.
 */
export async function unseal (init: UnsealInit): Promise<SealedHeader> {
  const { size } = await stat(init.path)
  const handle = await open(init.path, 'r')
  let decoded: ReturnType<typeof decodeHeader>
  let tag: Buffer | undefined
  try {
    const prefix = Buffer.alloc(PREFIX_BYTES)
    const { bytesRead } = await handle.read(prefix, 0, PREFIX_BYTES, 0)
    decoded = decodeHeader(prefix.subarray(0, bytesRead))
    init.expect?.(decoded.header)
    refuseUnencrypted(decoded.header, init.acceptUnencrypted)
    if (decoded.header.cipher !== 'none') {
      if (size < decoded.bodyOffset + TAG_BYTES) throw new SnapshotIntegrityError('the snapshot is cut short: its authentication tag is missing')
      tag = Buffer.alloc(TAG_BYTES)
      await handle.read(tag, 0, TAG_BYTES, size - TAG_BYTES)
    }
  } finally {
    await handle.close()
  }
  const { header, bodyOffset } = decoded
  const temp = `${init.destination}.${process.pid}.unseal`
  let sink: Writable | undefined
  try {
    const stages: NodeJS.ReadWriteStream[] = []
    if (tag !== undefined) {
      const key = readingKey(init.stateDir, header, init.passphrase)
      try {
        stages.push(createDecipheriv('aes-256-gcm', key, Buffer.from(header.nonce, 'base64')).setAAD(Buffer.from(decoded.headerBytes)).setAuthTag(tag))
      } catch (err) {
        throw new SnapshotIntegrityError(`the snapshot's header cannot be used to decrypt it (${(err as Error).message}): refused`, { cause: err })
      }
    }
    // Inflated in chunks of 1 MiB, not zlib's 16 KiB: a large index in small chunks spends more on
    // the stages and the writes than on the inflating itself (docs/benchmarks.md, "Restoring the
    // index beside restic").
    stages.push(header.compression === 'gzip' ? createGunzip({ chunkSize: BUFFER }) : createBrotliDecompress({ chunkSize: BUFFER }), limit(init.inflateBound(header, size - bodyOffset)))
    // Opened only once nothing above can throw: a stream left unpiped would hold its descriptor.
    const body = createReadStream(init.path, { start: bodyOffset, end: size - (tag === undefined ? 0 : TAG_BYTES) - 1, highWaterMark: BUFFER })
    sink = createWriteStream(temp, { mode: 0o600, highWaterMark: BUFFER })
    try {
      await pipeline([body, ...stages, sink], { signal: init.signal })
    } catch (err) {
      if (init.signal?.aborted === true || err instanceof SnapshotKeyError || err instanceof SnapshotTooLargeError) throw err
      const local = localWriteFailure(err)
      if (local !== undefined) throw new StateWriteError(init.stateDir, local, { cause: err })
      throw new SnapshotIntegrityError(`the snapshot's bytes were changed or damaged (${(err as Error).message}): refused`, { cause: err })
    }
    await rename(temp, init.destination)
    return header
  } finally {
    if (sink !== undefined) await streamClosed(sink)
    await rm(temp, { force: true })
  }
}

/** A header with no cipher, unless the caller accepts one: nothing proves who made such a file. */
export function refuseUnencrypted (header: SealedHeader, acceptUnencrypted: boolean | undefined): void {
  if (header.cipher === 'none' && acceptUnencrypted !== true) {
    throw new SnapshotUnencryptedError('the snapshot is not encrypted (cipher: none) but this device encrypts its snapshots: anyone who can write the pointer could have made it, so it is refused. ' +
      'If a device of yours publishes with encryption = "none", restore with --allow-unencrypted, or set [snapshot] accept_unencrypted = true; ' +
      'if not, `cidsync pointer repair` puts this device\'s index over it')
  }
}

/**
 * Passes bytes through until `bound` is passed, then fails before writing the chunk that passes
 * it; a function is asked at the first chunk (a stream's bound is known once its header is read).
 */
export function limit (bound: number | (() => number)): Transform {
  let total = 0
  let most: number | undefined
  return new Transform({
    transform (chunk: Buffer, _encoding, done) {
      total += chunk.byteLength
      most ??= typeof bound === 'number' ? bound : bound()
      if (total > most) {
        done(new SnapshotTooLargeError(`the snapshot inflates past ${most} bytes, more than its entry count and size allow: refused (a decompression bomb, or a damaged file): restore another snapshot with --cid, or put this device's index over it with \`cidsync pointer repair\``))
        return
      }
      done(null, chunk)
    }
  })
}

/** The file system's own failures (they carry the call that failed): this machine's disk, not the snapshot's bytes. */
const LOCAL_FAILURE_CODES = new Set(['ENOSPC', 'EDQUOT', 'EIO', 'EROFS', 'EFBIG', 'EACCES', 'EPERM'])
const LOCAL_FAILURE_CALLS = new Set(['open', 'read', 'write', 'fdatasync', 'fsync', 'close'])

/**
 * The errno of a failed local read, write or sync of an unseal (a full disk, a failing one), or
 * undefined: told apart so it is said as such (exit 1), never as damaged bytes (exit 4).
 */
export function localWriteFailure (err: unknown): string | undefined {
  const { code, syscall } = err as NodeJS.ErrnoException
  return code !== undefined && syscall !== undefined && LOCAL_FAILURE_CODES.has(code) && LOCAL_FAILURE_CALLS.has(syscall) ? code : undefined
}
