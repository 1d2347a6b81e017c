import { createDecipheriv, type DecipherGCM } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { rename, rm } from 'node:fs/promises'
import { Transform, type Readable, type TransformCallback, type Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createBrotliDecompress } from 'node:zlib'
import { SnapshotFormatError, SnapshotIntegrityError, SnapshotKeyError, SnapshotTooLargeError, SnapshotUnencryptedError, StateWriteError } from '../errors.js'
import { streamClosed } from '../util/stream-closed.js'
import { createWriteBackStream } from '../util/write-back-stream.js'
import { decodeHeader, MAGIC, PREFIX_BYTES, TAG_BYTES, type SealedHeader } from './format.js'
import { readingKey } from './key.js'
import { limit, localWriteFailure, refuseUnencrypted, type UnsealInit } from './sealed-file.js'

const BUFFER = 1024 * 1024

export interface UnsealStreamInit extends Omit<UnsealInit, 'path'> {
  /** The sealed bytes as they arrive (a fetch not yet verified: the caller relies on nothing made here until it is). */
  readonly source: Readable
  /** The sealed file's size as the caller knows it (a manifest names each segment's): the inflate bound is reckoned from it. */
  readonly bytes: number
  /**
   * The body is sent to the disk as it is inflated ({@link createWriteBackStream}): for a file
   * the caller will fsync, so that fsync finds little left to write.
   */
  readonly writeBack?: boolean
}

/**
 * {@link unseal} of bytes as they arrive instead of a file: the header is read from the first
 * bytes and checked, the body decrypted (the tag, its last 16 bytes, held back and verified at the
 * end) and inflated into `destination`, renamed into place only once the tag verified. Brotli
 * bodies only (`/2` files). So a fetch and its inflating overlap instead of following each other.
 */
export async function unsealStream (init: UnsealStreamInit): Promise<SealedHeader> {
  const temp = `${init.destination}.${process.pid}.unseal`
  const opener = new Opener(init)
  let sink: Writable | undefined
  try {
    sink = init.writeBack === true ? createWriteBackStream(temp, { mode: 0o600, highWaterMark: BUFFER }) : createWriteStream(temp, { mode: 0o600, highWaterMark: BUFFER })
    try {
      await pipeline([init.source, opener, createBrotliDecompress({ chunkSize: BUFFER }),
        limit(() => init.inflateBound(opener.opened(), init.bytes - opener.bodyOffset)), sink], { signal: init.signal })
    } catch (err) {
      if (init.signal?.aborted === true || err instanceof SnapshotKeyError || err instanceof SnapshotTooLargeError || err instanceof SnapshotFormatError ||
        err instanceof SnapshotUnencryptedError || err instanceof SnapshotIntegrityError) throw err
      // This machine's disk, not the snapshot: said as such (exit 1), never as damaged bytes (exit 4).
      const local = localWriteFailure(err)
      if (local !== undefined) throw new StateWriteError(init.stateDir, local, { cause: err })
      throw new SnapshotIntegrityError(`the snapshot's bytes were changed or damaged (${(err as Error).message}): refused`, { cause: err })
    }
    await rename(temp, init.destination)
    return opener.opened()
  } finally {
    if (sink !== undefined) await streamClosed(sink)
    await rm(temp, { force: true })
  }
}

/** Reads the header off the front, then deciphers the body, holding back the tag until the end. */
class Opener extends Transform {
  private readonly prefix: Buffer[] = []
  private prefixBytes = 0
  private header: SealedHeader | undefined
  private decipher: DecipherGCM | undefined
  private tail = Buffer.alloc(0)
  bodyOffset = 0

  constructor (private readonly init: UnsealStreamInit) {
    super()
  }

  /** The header, once read (the inflate bound asks for it with the first inflated bytes). */
  opened (): SealedHeader {
    if (this.header === undefined) throw new SnapshotIntegrityError('the snapshot is cut short: its header is missing')
    return this.header
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      if (this.header === undefined) {
        this.prefix.push(chunk)
        this.prefixBytes += chunk.byteLength
        const head = Buffer.concat(this.prefix)
        // Wait for the whole header (at most PREFIX_BYTES), unless the magic already says it is none.
        const end = head.byteLength < MAGIC.byteLength + 2 ? Infinity : MAGIC.byteLength + 2 + head.readUInt16BE(MAGIC.byteLength)
        const magic = head.subarray(0, Math.min(head.byteLength, MAGIC.byteLength)).equals(MAGIC.subarray(0, Math.min(head.byteLength, MAGIC.byteLength)))
        if (magic && head.byteLength < Math.min(end, PREFIX_BYTES)) { done(); return }
        chunk = this.open(head)
      }
      this.body(chunk)
      done()
    } catch (err) {
      done(err as Error)
    }
  }

  override _flush (done: TransformCallback): void {
    try {
      if (this.header === undefined) this.body(this.open(Buffer.concat(this.prefix)))
      if (this.decipher !== undefined) {
        if (this.tail.byteLength < TAG_BYTES) throw new SnapshotIntegrityError('the snapshot is cut short: its authentication tag is missing')
        this.decipher.setAuthTag(this.tail)
        this.push(this.decipher.final())
      }
      done()
    } catch (err) {
      done(err as Error)
    }
  }

  /** Checks the header as {@link unseal} does; answers the body bytes that came with it. */
  private open (head: Buffer): Buffer {
    const decoded = decodeHeader(head)
    const { header } = decoded
    this.init.expect?.(header)
    if (header.compression !== 'br') throw new SnapshotFormatError(`a sealed ${header.engine} file compressed with ${header.compression}, not br: the file is damaged`)
    refuseUnencrypted(header, this.init.acceptUnencrypted)
    if (header.cipher !== 'none') {
      const key = readingKey(this.init.stateDir, header, this.init.passphrase)
      try {
        this.decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(header.nonce, 'base64')).setAAD(Buffer.from(decoded.headerBytes))
      } catch (err) {
        throw new SnapshotIntegrityError(`the snapshot's header cannot be used to decrypt it (${(err as Error).message}): refused`, { cause: err })
      }
    }
    this.header = header
    this.bodyOffset = decoded.bodyOffset
    return head.subarray(decoded.bodyOffset)
  }

  private body (chunk: Buffer): void {
    if (this.decipher === undefined) { if (chunk.byteLength > 0) this.push(chunk); return }
    const bytes = this.tail.byteLength === 0 ? chunk : Buffer.concat([this.tail, chunk])
    if (bytes.byteLength <= TAG_BYTES) { this.tail = Buffer.from(bytes); return }
    // The last 16 bytes seen may be the tag: kept back until the next chunk or the end.
    this.tail = Buffer.from(bytes.subarray(bytes.byteLength - TAG_BYTES))
    this.push(this.decipher.update(bytes.subarray(0, bytes.byteLength - TAG_BYTES)))
  }
}
