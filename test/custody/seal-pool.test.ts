import { describe, expect, it, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CHUNK_BYTES, contentMasterKey, fileKey, sealStream } from '../../src/custody/index.js'
import { SealPool } from '../../src/custody/seal-pool.js'
import { CidBuilder, FileChangedWhileHashingError, cidProfile } from '../../src/content/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const profile = cidProfile('kubo-cidv1')
const master = contentMasterKey(randomBytes(32))

async function fileOf (dir: string, name: string, bytes: Buffer): Promise<{ path: string, cid: ReturnType<CidBuilder['finish']>, size: number, profile: typeof profile }> {
  const path = join(dir, name)
  await writeFile(path, bytes)
  return { path, cid: new CidBuilder(profile).update(bytes).finish(), size: bytes.byteLength, profile }
}

async function inProcess (bytes: Buffer, file: { cid: ReturnType<CidBuilder['finish']> }): Promise<Buffer> {
  const out: Buffer[] = []
  async function * one (): AsyncGenerator<Uint8Array> { yield bytes }
  for await (const chunk of sealStream(one(), { key: fileKey(master, file.cid), cid: file.cid, size: bytes.byteLength })) out.push(chunk.bytes)
  return Buffer.concat(out)
}

function pool (): SealPool {
  const p = new SealPool(1)
  onTestFinished(async () => { await p.close() })
  return p
}

describe('the sealing threads', () => {
  it('seal a small file and a large one in parts to the very bytes sealing in process makes, a part sent while the next is sealed', async () => {
    const dir = await useTempDir()
    const sealer = pool()
    const small = randomBytes(5000)
    const smallFile = await fileOf(dir, 'small', small)
    expect((await sealer.sealSmall(smallFile, fileKey(master, smallFile.cid))).equals(await inProcess(small, smallFile))).toBe(true)

    const large = randomBytes(3 * CHUNK_BYTES + 99)
    const largeFile = await fileOf(dir, 'large', large)
    const spoolDir = join(dir, 'spool')
    await mkdir(spoolDir)
    const sent: Buffer[] = []
    const parts = await sealer.sealParts(largeFile, {
      key: fileKey(master, largeFile.cid), spoolDir, partChunks: 1, storedParts: new Map(),
      storePart: async (_index, path, _bytes, object) => { sent.push(await readFile(path)); return object }
    })
    expect(parts).toHaveLength(4)
    expect(Buffer.concat(sent).equals(await inProcess(large, largeFile))).toBe(true)
    expect(await readdir(spoolDir)).toEqual([])
  })

  it('refuses a file whose bytes are not its row\'s, and answers an abort already given with its reason (failed before: a ReferenceError)', async () => {
    const dir = await useTempDir()
    const sealer = pool()
    const file = await fileOf(dir, 'changed', randomBytes(2 * CHUNK_BYTES))
    await writeFile(file.path, randomBytes(2 * CHUNK_BYTES))
    const spoolDir = join(dir, 'spool')
    await mkdir(spoolDir)
    const init = { key: fileKey(master, file.cid), spoolDir, partChunks: 1, storedParts: new Map<number, string>(), storePart: async (_i: number, _p: string, _b: number, object: string) => object }
    await expect(sealer.sealParts(file, init)).rejects.toBeInstanceOf(FileChangedWhileHashingError)
    await expect(sealer.sealSmall({ ...file, size: 10 }, init.key)).rejects.toBeInstanceOf(FileChangedWhileHashingError)
    const stop = new AbortController()
    const reason = new Error('stopped')
    stop.abort(reason)
    await expect(sealer.sealParts(file, { ...init, signal: stop.signal })).rejects.toBe(reason)
    expect(await readdir(spoolDir)).toEqual([])
  })
})
