import { createCipheriv, createDecipheriv } from 'node:crypto'
import { ContentIntegrityError } from '../errors.js'

/** Plaintext bytes per sealed chunk. */
export const CHUNK_BYTES = 1024 * 1024
/** What sealing adds to each chunk: the GCM tag. */
export const TAG_BYTES = 16
const DOMAIN = Buffer.from('cidsync-content/1')

/** How many chunks a file of `size` bytes seals to: an empty file is one empty chunk. */
export function chunkCount (size: number): number {
  return Math.max(1, Math.ceil(size / CHUNK_BYTES))
}

/** The length of a file's blob: every chunk grows by its tag. */
export function sealedSize (size: number): number {
  return size + chunkCount(size) * TAG_BYTES
}

/** The plaintext length of chunk `index` of a file of `size` bytes. */
export function plainChunkLength (size: number, index: number): number {
  const count = chunkCount(size)
  if (!Number.isSafeInteger(index) || index < 0 || index >= count) throw new RangeError(`chunk ${index} of a ${count}-chunk file`)
  return index === count - 1 ? size - index * CHUNK_BYTES : CHUNK_BYTES
}

function nonceOf (index: number): Buffer {
  const nonce = Buffer.alloc(12)
  nonce.writeBigUInt64BE(BigInt(index), 4)
  return nonce
}

/** What a chunk is bound to: its file's CID, as bytes (and as text for messages). */
export interface ChunkCid { readonly bytes: Uint8Array, toString: () => string }

function associatedData (cid: ChunkCid, index: number, last: boolean): Buffer {
  const tail = Buffer.alloc(9)
  tail.writeBigUInt64BE(BigInt(index), 0)
  tail[8] = last ? 1 : 0
  return Buffer.concat([DOMAIN, cid.bytes, tail])
}

/** Seals chunk `index` of the file `cid` under its file key: ciphertext then tag. */
export function sealChunk (key: Uint8Array, cid: ChunkCid, index: number, last: boolean, plain: Uint8Array): Buffer {
  return Buffer.concat(sealChunkParts(key, cid, index, last, plain))
}

/**
 * Plaintext is sealed this much at a time. Node gives each update's ciphertext in new memory: a
 * MiB each is new pages to fault in, where small pieces are memory the allocator hands out again.
 */
const SEAL_PIECE_BYTES = 64 * 1024

/**
 * {@link sealChunk} as pieces, the ciphertext's then the tag, for a writer that need not join them
 * (one copy less a chunk). Their bytes in order are the sealed chunk.
 */
export function sealChunkParts (key: Uint8Array, cid: ChunkCid, index: number, last: boolean, plain: Uint8Array): Buffer[] {
  const cipher = createCipheriv('aes-256-gcm', key, nonceOf(index))
  cipher.setAAD(associatedData(cid, index, last))
  const pieces: Buffer[] = []
  for (let at = 0; at < plain.byteLength || pieces.length === 0; at += SEAL_PIECE_BYTES) pieces.push(cipher.update(plain.subarray(at, at + SEAL_PIECE_BYTES)))
  // GCM gives nothing more at final() (the ciphertext is as long as the plaintext); kept if it ever did.
  const tail = cipher.final()
  if (tail.byteLength > 0) pieces.push(tail)
  pieces.push(cipher.getAuthTag())
  return pieces
}

/**
 * Opens chunk `index` of the file `cid`, or throws a {@link ContentIntegrityError} naming the chunk:
 * a changed byte, a chunk moved to another place or file, or a non-final chunk presented as the
 * last all fail here.
 */
export function openChunk (key: Uint8Array, cid: ChunkCid, index: number, last: boolean, sealed: Uint8Array): Buffer {
  const pieces = openChunkPieces(key, cid, index, last, sealed, Math.max(1, sealed.byteLength))
  return pieces.length === 1 ? pieces[0] as Buffer : Buffer.concat(pieces)
}

/**
 * {@link openChunk} as pieces of at most `pieceBytes` of plaintext, answered only once the
 * chunk's tag checked. Node gives each update's plaintext in new zeroed memory: small pieces are
 * memory the allocator hands out again, where a MiB each is new pages to fault in and clear.
 */
export function openChunkPieces (key: Uint8Array, cid: ChunkCid, index: number, last: boolean, sealed: Uint8Array, pieceBytes: number): Buffer[] {
  if (sealed.byteLength < TAG_BYTES) throw new ContentIntegrityError(`chunk ${index} of ${cid.toString()} is ${sealed.byteLength} bytes, shorter than its tag`)
  const body = sealed.subarray(0, sealed.byteLength - TAG_BYTES)
  const decipher = createDecipheriv('aes-256-gcm', key, nonceOf(index))
  decipher.setAAD(associatedData(cid, index, last))
  decipher.setAuthTag(sealed.subarray(sealed.byteLength - TAG_BYTES))
  try {
    const pieces: Buffer[] = []
    for (let at = 0; at < body.byteLength || pieces.length === 0; at += pieceBytes) pieces.push(decipher.update(body.subarray(at, at + pieceBytes)))
    // GCM gives everything from update(); final() only checks the tag.
    const rest = decipher.final()
    if (rest.byteLength > 0) pieces.push(rest)
    return pieces
  } catch {
    throw new ContentIntegrityError(`chunk ${index} of ${cid.toString()} does not open: its stored bytes are damaged or forged (its tag does not match them)`)
  }
}
