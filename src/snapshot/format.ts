import { SnapshotFormatError } from '../errors.js'

/**
 * A snapshot file: `MAGIC`, a 2-byte big-endian header length, the header (JSON), then the body:
 * the gzip of a SQLite database, encrypted with AES-256-GCM (its 16-byte tag last) unless the
 * cipher is `none`. Magic, length and header are the cipher's associated data, so changing any
 * of them fails authentication.
 */
export const MAGIC = Buffer.from('CIDSNAP\u0000', 'latin1')
export const FORMAT_VERSION = 1
export const ENGINE = 'cidsync-sqlite/1'
export const TAG_BYTES = 16
const MAX_HEADER_BYTES = 4096

export interface SnapshotHeader {
  readonly format: number
  readonly engine: string
  readonly compression: 'gzip'
  readonly cipher: 'aes-256-gcm' | 'none'
  /** base64 of the 12-byte GCM nonce; empty with no cipher. */
  readonly nonce: string
  /** Which key: the first 8 bytes of SHA-256(key), hex; empty with no cipher. */
  readonly keyId: string
  /** base64 scrypt salt when the key comes from a passphrase; empty otherwise. */
  readonly salt: string
  readonly createdAt: string
  readonly device: string
  readonly entries: number
}

/** The bytes before the body: magic, length, header. */
export function encodeHeader (header: SnapshotHeader): Buffer {
  const json = Buffer.from(JSON.stringify(header))
  const length = Buffer.alloc(2)
  length.writeUInt16BE(json.byteLength)
  return Buffer.concat([MAGIC, length, json])
}

/** Parses the prefix of a snapshot file; answers the header and where the body starts. */
export function decodeHeader (prefix: Buffer): { header: SnapshotHeader, bodyOffset: number, headerBytes: Buffer } {
  if (prefix.byteLength < MAGIC.byteLength + 2 || !prefix.subarray(0, MAGIC.byteLength).equals(MAGIC)) {
    throw new SnapshotFormatError('not a cidsync snapshot (wrong magic): the CID may point at something else, or the file is damaged')
  }
  const length = prefix.readUInt16BE(MAGIC.byteLength)
  const end = MAGIC.byteLength + 2 + length
  if (length > MAX_HEADER_BYTES || prefix.byteLength < end) throw new SnapshotFormatError('the snapshot header is cut short or too long: the file is damaged')
  let header: SnapshotHeader
  try {
    header = JSON.parse(prefix.subarray(MAGIC.byteLength + 2, end).toString('utf8')) as SnapshotHeader
  } catch {
    throw new SnapshotFormatError('the snapshot header is not readable: the file is damaged')
  }
  if (header.format !== FORMAT_VERSION) {
    throw new SnapshotFormatError(`snapshot format version ${String(header.format)} is not one this cidsync reads (it reads ${FORMAT_VERSION}): upgrade cidsync`)
  }
  if (header.engine !== ENGINE) throw new SnapshotFormatError(`the snapshot was made by engine ${String(header.engine)}, not ${ENGINE}: cidsync cannot restore it`)
  if (header.compression !== 'gzip' || (header.cipher !== 'aes-256-gcm' && header.cipher !== 'none')) {
    throw new SnapshotFormatError(`unknown snapshot compression ${String(header.compression)} or cipher ${String(header.cipher)}: upgrade cidsync`)
  }
  return { header, bodyOffset: end, headerBytes: prefix.subarray(0, end) }
}
