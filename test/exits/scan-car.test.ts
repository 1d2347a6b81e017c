import { describe, expect, it, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CarReader } from '@ipld/car'
import * as dagPb from '@ipld/dag-pb'
import { varint } from 'multiformats'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { scanCar } from '../../src/exits/index.js'
import { CarFormatError } from '../../src/errors.js'
import { carOf } from '../helpers/car.js'


function tempFile (bytes: Uint8Array): string {
  const dir = mkdtempSync(join(tmpdir(), 'cidsync-scan-'))
  onTestFinished(() => { rmSync(dir, { recursive: true, force: true }) })
  const path = join(dir, 'x.car')
  writeFileSync(path, bytes)
  return path
}

describe('scanCar against hostile CARs', () => {
  it('refuses a block that is not valid dag-pb as a CAR format error, naming it', async () => {
    const junk = Uint8Array.of(0xff, 0xff, 0xff)
    const cid = CID.createV1(dagPb.code, await sha256.digest(junk))
    const path = tempFile(await carOf([cid], [{ cid, bytes: junk }]))
    await expect(scanCar(path)).rejects.toThrow(CarFormatError)
    await expect(scanCar(path)).rejects.toThrow(`block ${cid.toString()}`)
  })

  it('refuses a section announcing a gigabyte at its length, without reading on', async () => {
    const cid = CID.createV1(0x55, await sha256.digest(Uint8Array.of(1)))
    const prefix = new Uint8Array(varint.encodingLength(2 ** 30))
    varint.encodeTo(2 ** 30, prefix)
    const path = tempFile(Buffer.concat([await carOf([cid], []), prefix, cid.bytes, Buffer.alloc(1024)]))
    await expect(scanCar(path)).rejects.toThrow(/announces 1073741\d+ bytes/)
  })
})

describe('scanCar bounds what it remembers', () => {
  it('refuses a CAR whose nodes link to more blocks than the bound, naming the file, before it is held in memory', async () => {
    const leaves = await Promise.all(Array.from({ length: 600 }, async (_, i) => CID.createV1(0x55, await sha256.digest(Uint8Array.of(i & 0xff, i >> 8)))))
    const nodes = await Promise.all([0, 1].map(async i => {
      const bytes = dagPb.encode(dagPb.prepare({ Data: Uint8Array.of(i), Links: leaves.map(Hash => ({ Hash })) }))
      return { cid: CID.createV1(dagPb.code, await sha256.digest(bytes)), bytes }
    }))
    const path = tempFile(await carOf([nodes[0]?.cid as CID], nodes))
    await expect(scanCar(path, undefined, { maxLinks: 1000 })).rejects.toThrow(CarFormatError)
    await expect(scanCar(path, undefined, { maxLinks: 1000 })).rejects.toThrow('link to more than 1000 blocks')
    // Under the bound it reads as before.
    expect((await scanCar(path, undefined, { maxLinks: 1200 })).blocks).toBe(2)
  })
})

describe('scanCar reads a CARv1 through one buffer', () => {
  it('finds the same blocks, bytes and objects as @ipld/car\'s reader, across its 4 MiB reads (blocks cut at every place), a CARv2 too; a CAR cut short is damaged, named', async () => {
    // Leaves of uneven sizes up to 1 MiB: 12 MiB in all, so sections straddle each 4 MiB read.
    const leaves = await Promise.all(Array.from({ length: 23 }, async (_, i) => {
      const bytes = randomBytes(((i * 7919) % 1024) * 1024 + 1 + i)
      return { cid: CID.createV1(0x55, await sha256.digest(bytes)), bytes }
    }))
    const node = dagPb.encode(dagPb.prepare({ Links: leaves.slice(0, 10).map(l => ({ Hash: l.cid, Tsize: l.bytes.byteLength })) }))
    const root = { cid: CID.createV1(dagPb.code, await sha256.digest(node)), bytes: node }
    const car = await carOf([root.cid], [root, ...leaves])
    const path = tempFile(car)
    const reader = await CarReader.fromBytes(car)
    const want = { blocks: 0, bytes: 0 }
    for await (const block of reader.blocks()) { want.blocks++; want.bytes += block.bytes.byteLength }
    const scanned = await scanCar(path)
    // One part: the whole of its sections, from past the header to the end.
    const varintLength = (n: number): number => n < 128 ? 1 : 1 + varintLength(Math.floor(n / 128))
    const sections = [root, ...leaves].map(b => b.cid.bytes.byteLength + b.bytes.byteLength)
    const headerEnd = car.byteLength - sections.reduce((sum, n) => sum + varintLength(n) + n, 0)
    expect(scanned).toEqual({ root: root.cid.toString(), publish: root.cid.toString(), ...want, objects: [root.cid, ...leaves.slice(10).map(l => l.cid)].map(c => c.toString()), parts: [{ start: headerEnd, end: car.byteLength, blocks: want.blocks }] })

    // The same payload in a CARv2: read through @ipld/car's iterator, the same answer.
    const fixed = Buffer.alloc(40)
    fixed.writeBigUInt64LE(64n, 16)
    fixed.writeBigUInt64LE(BigInt(car.byteLength), 24)
    const v2 = Buffer.concat([Uint8Array.of(0x0a, 0xa1, 0x67, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x02), fixed, Buffer.alloc(64 - 51), car])
    // A CARv2 is not cut in parts: sent whole.
    expect(await scanCar(tempFile(v2))).toEqual({ ...scanned, parts: undefined })

    const cut = tempFile(car.subarray(0, car.byteLength - 1000))
    await expect(scanCar(cut)).rejects.toThrow(CarFormatError)
    await expect(scanCar(cut)).rejects.toThrow(/is damaged after 23 blocks/)
    await expect(scanCar(tempFile(Uint8Array.of()))).rejects.toThrow(/is not a CAR file/)
  })
})

describe('scanCar with a plain root node written twice', () => {
  it('takes it again as the root\'s node: the segments two publishes share stay objects', async () => {
    const raw = async (text: string): Promise<{ cid: CID, bytes: Uint8Array }> => {
      const bytes = new TextEncoder().encode(text)
      return { cid: CID.createV1(0x55, await sha256.digest(bytes)), bytes }
    }
    const node = async (links: dagPb.PBLink[]): Promise<{ cid: CID, bytes: Uint8Array }> => {
      const bytes = dagPb.encode(dagPb.prepare({ Links: links }))
      return { cid: CID.createV1(dagPb.code, await sha256.digest(bytes)), bytes }
    }
    const [m1, m2, s1, s2] = [await raw('manifest 1'), await raw('manifest 2'), await raw('segment 1'), await raw('segment 2')]
    // Two publishes with the same segments (a publish that changed nothing) share one tree node.
    const tree = await node([{ Hash: s1.cid }, { Hash: s2.cid }])
    const first = await node([{ Name: 'manifest', Hash: m1.cid }, { Name: 'segments', Hash: tree.cid }])
    const head = await node([{ Name: 'manifest', Hash: m2.cid }, { Name: 'previous', Hash: first.cid }, { Name: 'segments', Hash: tree.cid }])
    const path = tempFile(await carOf([head.cid], [m2, m1, s1, s2, head, tree, first, tree]))
    const scanned = await scanCar(path)
    expect(scanned.publish).toBe(m2.cid.toString())
    expect(scanned.blocks).toBe(8)
    expect([...scanned.objects].sort()).toEqual([m1, m2, s1, s2].map(b => b.cid.toString()).sort())
  })
})
