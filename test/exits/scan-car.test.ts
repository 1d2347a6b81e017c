import { describe, expect, it, onTestFinished } from 'vitest'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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
