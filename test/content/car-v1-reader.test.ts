import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { CarBlockIterator } from '@ipld/car/iterator'
import { varint } from 'multiformats'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { CarSectionError, CarV1Reader, ChunkSource } from '../../src/content/index.js'
import { carOf } from '../helpers/car.js'

interface Block { cid: CID, bytes: Uint8Array }

async function raw (bytes: Uint8Array): Promise<Block> {
  return { cid: CID.createV1(0x55, await sha256.digest(bytes)), bytes }
}

/** `bytes` handed over in chunks of `size`, counting how many were taken. */
function chunked (bytes: Uint8Array, size: number, taken = { chunks: 0 }): AsyncIterable<Uint8Array> {
  return (async function * () {
    for (let at = 0; at < bytes.byteLength; at += size) {
      taken.chunks++
      yield bytes.subarray(at, at + size)
    }
  })()
}

type Outcome = { blocks: string[] } | { error: string }

/** What this reader makes of a CAR: each block's CID and bytes copied out (they are views), or its error's kind. */
async function readOurs (car: Uint8Array, chunk: number, readBytes: number): Promise<Outcome> {
  const blocks: string[] = []
  try {
    const reader = await CarV1Reader.open(new ChunkSource(chunked(car, chunk)), { maxBlockBytes: 512 * 1024, readBytes })
    if (reader === undefined) return { error: 'v2' }
    for await (const { cid, bytes } of reader.sections()) blocks.push(`${cid.toString()}:${Buffer.from(bytes).toString('base64')}`)
    return { blocks }
  } catch (err) {
    return { error: err instanceof CarSectionError ? 'framing' : 'other' }
  }
}

/** What `@ipld/car`'s iterator (what dag/import read with before) makes of it. */
async function readTheirs (car: Uint8Array): Promise<Outcome> {
  const blocks: string[] = []
  try {
    const reader = await CarBlockIterator.fromIterable(chunked(car, 65536))
    for await (const { cid, bytes } of reader) blocks.push(`${cid.toString()}:${Buffer.from(bytes).toString('base64')}`)
    return { blocks }
  } catch {
    return { error: 'any' }
  }
}

describe('CarV1Reader: a CAR read through one buffer', () => {
  it('reads the same blocks as @ipld/car whatever the chunks and the buffer, blocks straddling every read', async () => {
    const blocks: Block[] = []
    // Sizes that fall across the reader's reads at ever other offsets.
    for (const size of [1, 300_000, 70_001, 262_144, 5, 131_071, 400_000, 99_999, 262_144, 1]) blocks.push(await raw(randomBytes(size)))
    const car = await carOf([(blocks[0] as Block).cid], blocks)
    const theirs = await readTheirs(car)
    expect('blocks' in theirs && theirs.blocks.length).toBe(blocks.length)
    for (const chunk of [7, 4093, 65536, 1024 * 1024, car.byteLength]) {
      for (const readBytes of [1000, 65536, 1024 * 1024]) {
        expect(await readOurs(car, chunk, readBytes), `chunks of ${chunk}, reads of ${readBytes}`).toEqual(theirs)
      }
    }
  })

  it('refuses a CAR cut anywhere but between sections, and reads one cut between them as @ipld/car does', async () => {
    const blocks = [await raw(randomBytes(3000)), await raw(randomBytes(200)), await raw(randomBytes(5000))]
    const car = await carOf([(blocks[0] as Block).cid], blocks)
    const cuts = new Set<number>()
    for (let at = 0; at < car.byteLength; at += 97) cuts.add(at)
    // Around each section's start: inside its length, its CID, its block.
    let at = (await carOf([(blocks[0] as Block).cid], [])).byteLength
    for (const block of blocks) {
      for (const d of [-1, 0, 1, 2, 30, 40]) cuts.add(at + d)
      at += varint.encodingLength(block.cid.bytes.byteLength + block.bytes.byteLength) + block.cid.bytes.byteLength + block.bytes.byteLength
    }
    for (const cut of [...cuts].filter(c => c > 0 && c < car.byteLength)) {
      const part = car.subarray(0, cut)
      const ours = await readOurs(part, 1000, 1000)
      const theirs = await readTheirs(part)
      if ('error' in theirs) expect('error' in ours, `cut at ${cut}`).toBe(true)
      else expect(ours, `cut at ${cut}`).toEqual(theirs)
    }
  })

  it('refuses a section announcing a gigabyte, or a header past its bound, at its length, without reading on', async () => {
    const header = await carOf([(await raw(Uint8Array.of(1))).cid], [])
    const prefix = new Uint8Array(varint.encodingLength(2 ** 30))
    varint.encodeTo(2 ** 30, prefix)
    const taken = { chunks: 0 }
    // The announced gigabyte's first MiBs follow: the reader must not wait for nor hold them.
    const hostile = (async function * () {
      yield * chunked(Buffer.concat([header, prefix]), 65536, taken)
      for (let i = 0; i < 1000; i++) { taken.chunks++; yield randomBytes(65536) }
    })()
    const reader = await CarV1Reader.open(new ChunkSource(hostile), { maxBlockBytes: 512 * 1024, readBytes: 65536 })
    await expect((async () => { for await (const _ of (reader as CarV1Reader).sections()) { /* none */ } })()).rejects.toThrow(/announces 1073741824 bytes/)
    expect(taken.chunks).toBeLessThan(5)
    const bigHeader = new Uint8Array(varint.encodingLength(2 ** 21))
    varint.encodeTo(2 ** 21, bigHeader)
    await expect(CarV1Reader.open(new ChunkSource(chunked(bigHeader, 10)), { maxBlockBytes: 1024 })).rejects.toThrow(CarSectionError)
    await expect(CarV1Reader.open(new ChunkSource(chunked(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1), 3)), { maxBlockBytes: 1024 })).rejects.toThrow(/longer than 9 bytes/)
  })

  it('gives back a CARv2 whole (not read here), for another reader', async () => {
    const block = await raw(randomBytes(100))
    const v1 = await carOf([block.cid], [block])
    const pragma = Uint8Array.of(0x0a, 0xa1, 0x67, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x02)
    const fixed = Buffer.alloc(40)
    fixed.writeBigUInt64LE(BigInt(pragma.byteLength + 40), 16)
    fixed.writeBigUInt64LE(BigInt(v1.byteLength), 24)
    const v2 = Buffer.concat([pragma, fixed, v1])
    const source = new ChunkSource(chunked(v2, 5))
    expect(await CarV1Reader.open(source, { maxBlockBytes: 1024 })).toBeUndefined()
    const replayed: Uint8Array[] = []
    for await (const chunk of source.replay()) replayed.push(chunk)
    expect(Buffer.concat(replayed).equals(v2)).toBe(true)
  })
})
