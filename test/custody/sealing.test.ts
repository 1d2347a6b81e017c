import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { CHUNK_BYTES, TAG_BYTES, contentMasterKey, fileKey, openChunkPieces, openStream, sealChunk, sealStream, sealedSize } from '../../src/custody/index.js'
import { CidBuilder, cidProfile } from '../../src/content/index.js'
import { ContentIntegrityError } from '../../src/errors.js'

const profile = cidProfile('kubo-cidv1')

function cidOf (bytes: Uint8Array): ReturnType<CidBuilder['finish']> {
  return new CidBuilder(profile).update(bytes).finish()
}

/** Yields `bytes` in slices of `size` (odd sizes cross chunk boundaries). */
async function * slices (bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.byteLength; at += size) yield bytes.subarray(at, at + size)
}

async function seal (bytes: Uint8Array, key: Uint8Array, slice = 100_003): Promise<Buffer> {
  const cid = cidOf(bytes)
  const out: Buffer[] = []
  for await (const chunk of sealStream(slices(bytes, slice), { key: fileKey(key, cid), cid, size: bytes.byteLength })) out.push(chunk.bytes)
  return Buffer.concat(out)
}

async function open (blob: Uint8Array, key: Uint8Array, original: Uint8Array, slice = 77_777): Promise<Buffer> {
  const cid = cidOf(original)
  const out: Buffer[] = []
  for await (const plain of openStream(slices(blob, slice), { key: fileKey(key, cid), cid, size: original.byteLength })) out.push(plain)
  return Buffer.concat(out)
}

describe('content sealing', () => {
  const master = contentMasterKey(randomBytes(32))

  it.each([0, 1, 4096, CHUNK_BYTES - 1, CHUNK_BYTES, CHUNK_BYTES + 1, 3 * CHUNK_BYTES + 12345])('round-trips %i bytes, sealed to size + a tag per chunk', async (size) => {
    const bytes = randomBytes(size)
    const blob = await seal(bytes, master)
    expect(blob.byteLength).toBe(sealedSize(size))
    expect((await open(blob, master, bytes)).equals(bytes)).toBe(true)
  })

  it('seals equal files to equal bytes under one key (stored once), and to other bytes under another', async () => {
    const bytes = randomBytes(2 * CHUNK_BYTES + 5)
    const first = await seal(bytes, master, 4096)
    const again = await seal(bytes, master, 1_000_000)
    expect(again.equals(first)).toBe(true)
    const other = await seal(bytes, contentMasterKey(randomBytes(32)))
    expect(other.equals(first)).toBe(false)
    // Nothing of the plaintext shows through.
    expect(first.includes(bytes.subarray(0, 64))).toBe(false)
  })

  it('refuses a flipped bit, a truncated blob, an extra byte, swapped chunks and another key, naming the file', async () => {
    const bytes = randomBytes(2 * CHUNK_BYTES + 10)
    const blob = await seal(bytes, master)
    const cid = cidOf(bytes).toString()
    const flipped = Buffer.from(blob)
    flipped.writeUInt8(flipped.readUInt8(CHUNK_BYTES + 40) ^ 1, CHUNK_BYTES + 40)
    await expect(open(flipped, master, bytes)).rejects.toThrow(ContentIntegrityError)
    await expect(open(blob.subarray(0, 2 * (CHUNK_BYTES + TAG_BYTES)), master, bytes)).rejects.toThrow(/truncated/)
    await expect(open(Buffer.concat([blob, Buffer.from([0])]), master, bytes)).rejects.toThrow(/longer/)
    const sealedChunk = CHUNK_BYTES + TAG_BYTES
    const swapped = Buffer.concat([blob.subarray(sealedChunk, 2 * sealedChunk), blob.subarray(0, sealedChunk), blob.subarray(2 * sealedChunk)])
    await expect(open(swapped, master, bytes)).rejects.toThrow(cid)
    await expect(open(blob, contentMasterKey(randomBytes(32)), bytes)).rejects.toThrow(/does not open/)
  })

  it('refuses to pass a whole-chunk file cut at a chunk boundary off as complete', async () => {
    // Two full chunks: dropping the second leaves a first chunk that was sealed as not last.
    const bytes = randomBytes(2 * CHUNK_BYTES)
    const blob = await seal(bytes, master)
    const cid = cidOf(bytes)
    const shortened = { key: fileKey(master, cid), cid, size: CHUNK_BYTES }
    const read = async (): Promise<void> => { for await (const _ of openStream(slices(blob.subarray(0, CHUNK_BYTES + TAG_BYTES), 9999), shortened)) void _ }
    await expect(read()).rejects.toThrow(ContentIntegrityError)
  })

  it('says a file changed when the source gives more or fewer bytes than its row', async () => {
    const bytes = randomBytes(5000)
    const cid = cidOf(bytes)
    const run = async (size: number): Promise<void> => { for await (const _ of sealStream(slices(bytes, 1000), { key: fileKey(master, cid), cid, size })) void _ }
    await expect(run(4000)).rejects.toMatchObject({ code: 'ERR_FILE_CHANGED' })
    await expect(run(6000)).rejects.toMatchObject({ code: 'ERR_FILE_CHANGED' })
  })

  it('hands the plaintext it seals to a hasher, so the CID is computed from the bytes stored', async () => {
    const bytes = randomBytes(CHUNK_BYTES + 999)
    const cid = cidOf(bytes)
    const builder = new CidBuilder(profile)
    for await (const _ of sealStream(slices(bytes, 65536), { key: fileKey(master, cid), cid, size: bytes.byteLength, onPlain: b => builder.update(b) })) void _
    expect(builder.finish().equals(cid)).toBe(true)
  })

  it('opens a chunk in small pieces, handed over only once its tag checked', () => {
    const key = fileKey(contentMasterKey(randomBytes(32)), cidOf(Buffer.from('x')))
    const cid = cidOf(Buffer.from('x'))
    const plain = randomBytes(CHUNK_BYTES)
    const sealed = sealChunk(key, cid, 3, false, plain)
    const pieces = openChunkPieces(key, cid, 3, false, sealed, 64 * 1024)
    expect(pieces.length).toBe(16)
    expect(pieces.every(p => p.byteLength <= 64 * 1024)).toBe(true)
    expect(Buffer.concat(pieces).equals(plain)).toBe(true)
    // A flipped bit in the last piece's bytes: nothing of the chunk comes out, not even its first pieces.
    sealed.writeUInt8((sealed[CHUNK_BYTES - 1] ?? 0) ^ 1, CHUNK_BYTES - 1)
    expect(() => openChunkPieces(key, cid, 3, false, sealed, 64 * 1024)).toThrow(ContentIntegrityError)
    expect(openChunkPieces(key, cid, 0, true, sealChunk(key, cid, 0, true, Buffer.alloc(0)), 64 * 1024).map(p => p.byteLength)).toEqual([0])
  })
})
