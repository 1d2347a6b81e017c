import { describe, expect, it, onTestFinished } from 'vitest'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { CarFile } from '../../src/exits/car-file.js'
import { carOf } from '../helpers/car.js'

function tempDir (under = tmpdir()): string {
  const dir = mkdtempSync(join(under, 'cidsync-car-file-'))
  onTestFinished(() => { rmSync(dir, { recursive: true, force: true }) })
  return dir
}

async function rawBlock (bytes: Uint8Array): Promise<{ cid: CID, bytes: Uint8Array }> {
  return { cid: CID.createV1(0x55, await sha256.digest(bytes)), bytes }
}

describe('CarFile', () => {
  it('writes the same bytes as @ipld/car for blocks that span many batches (small ones past its part limit, large ones past its byte limit)', async () => {
    const blocks: Array<{ cid: CID, bytes: Uint8Array }> = []
    for (let i = 0; i < 400; i++) blocks.push(await rawBlock(Uint8Array.of(i & 0xff, i >> 8, 7)))
    for (let i = 0; i < 11; i++) blocks.push(await rawBlock(Buffer.alloc(1024 * 1024 + i, i + 1)))
    blocks.push(await rawBlock(new Uint8Array(0)))
    for (let i = 0; i < 300; i++) blocks.push(await rawBlock(Buffer.alloc(100 + i, i & 0xff)))
    const root = blocks[0]!.cid
    const path = join(tempDir(), 'x.car')
    const car = await CarFile.create(path, root)
    for (const block of blocks) await car.put(block.cid, block.bytes)
    const size = await car.close()
    const expected = await carOf([root], blocks)
    const written = readFileSync(path)
    expect(size).toBe(expected.byteLength)
    expect(Buffer.compare(written, expected)).toBe(0)
    expect(statSync(path).mode & 0o777).toBe(0o600)
  })

  // O_DIRECT writes padded sectors and truncates the pad; without it (a filesystem that refuses
  // it) the page cache takes the bytes as they are: the same CAR either way, down to a few bytes.
  it('writes the same bytes with O_DIRECT and without, on the temp dir\'s disk and on tmpfs, for a CAR shorter than a sector too', async () => {
    const dirs = [tempDir(), ...(existsSync('/dev/shm') ? [tempDir('/dev/shm')] : [])]
    const one = await rawBlock(Uint8Array.of(1, 2, 3))
    const big = await rawBlock(Buffer.alloc(4 * 1024 * 1024 - 45, 9))
    for (const [dir, direct] of dirs.flatMap(d => [[d, true], [d, false]] as const)) {
      for (const [name, blocks] of [['tiny', [one]], ['edge', [one, big, one]]] as const) {
        const path = join(dir, `${name}-${String(direct)}.car`)
        const car = await CarFile.create(path, one.cid, { direct })
        for (const block of blocks) await car.put(block.cid, block.bytes)
        const size = await car.close()
        const expected = await carOf([one.cid], [...blocks])
        expect(size, `${path}`).toBe(expected.byteLength)
        expect(Buffer.compare(readFileSync(path), expected), `${path}`).toBe(0)
      }
    }
  })

  it('names a root known only at the end in the header, with O_DIRECT and without, and refuses one of another length', async () => {
    const dirs = [tempDir(), ...(existsSync('/dev/shm') ? [tempDir('/dev/shm')] : [])]
    const placeholder = await rawBlock(Uint8Array.of(0))
    const one = await rawBlock(Uint8Array.of(1, 2, 3))
    const big = await rawBlock(Buffer.alloc(5 * 1024 * 1024 + 7, 3))
    for (const [dir, direct] of dirs.flatMap(d => [[d, true], [d, false]] as const)) {
      for (const [name, blocks] of [['tiny', [one]], ['large', [big, one]]] as const) {
        const path = join(dir, `late-${name}-${String(direct)}.car`)
        const car = await CarFile.create(path, placeholder.cid, { direct })
        for (const block of blocks) await car.put(block.cid, block.bytes)
        car.nameRoot(one.cid)
        await car.close()
        expect(Buffer.compare(readFileSync(path), await carOf([one.cid], [...blocks])), path).toBe(0)
      }
    }
    const car = await CarFile.create(join(dirs[0] as string, 'other.car'), placeholder.cid)
    expect(() => { car.nameRoot(CID.parse('QmbWqxBEKC3P8tqsKc98xmWNzrzDtRLMiMPL8wBuTGsMnR')) }).toThrow(/as long as the one it replaces/)
    await car.abort()
  })

  it('never writes over a file that is there', async () => {
    const path = join(tempDir(), 'x.car')
    writeFileSync(path, 'kept')
    const { cid } = await rawBlock(Uint8Array.of(1))
    await expect(CarFile.create(path, cid)).rejects.toThrow(/EEXIST/)
    expect(readFileSync(path, 'utf8')).toBe('kept')
  })
})
