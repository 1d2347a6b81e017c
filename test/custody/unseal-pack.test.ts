import { describe, expect, it, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { CidBuilder, cidProfile } from '../../src/content/index.js'
import { ObjectMemory, SLAB_BYTES, contentMasterKey, fileKey, sealStream, unsealPackFiles, type ContentRecord, type UnsealFileInit } from '../../src/custody/index.js'
import { SealPool } from '../../src/custody/seal-pool.js'
import { ContentIntegrityError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'

const profile = cidProfile('kubo-cidv1')
const snapshotKey = randomBytes(32)
const master = contentMasterKey(snapshotKey)

async function sealed (plain: Buffer, cid: ReturnType<CidBuilder['finish']>): Promise<Buffer> {
  const out: Buffer[] = []
  async function * one (): AsyncGenerator<Uint8Array> { yield plain }
  for await (const chunk of sealStream(one(), { key: fileKey(master, cid), cid, size: plain.byteLength })) out.push(chunk.bytes)
  return Buffer.concat(out)
}

describe('the files of one pack brought back together', () => {
  it('answer each file on its own: the good ones verified and held, a record of another object, a range past the end and a forged size each refused, the pack released by every file', async () => {
    const dir = await useTempDir()
    const plains = [randomBytes(4000), randomBytes(9000), randomBytes(1), randomBytes(20_000)]
    const cids = plains.map(p => new CidBuilder(profile).update(p).finish())
    const blobs = await Promise.all(plains.map(async (p, i) => await sealed(p, cids[i] as ReturnType<CidBuilder['finish']>)))
    const pack = Buffer.concat(blobs)
    const packCid = new CidBuilder(profile).update(pack).finish().toString()
    let fetches = 0
    const memory = new ObjectMemory(4 * SLAB_BYTES, async (cid, { slab }) => {
      fetches++
      expect(cid).toBe(packCid)
      const into = slab()
      into.set(pack)
      return [into.subarray(0, pack.byteLength)]
    })
    const pool = new SealPool(1)
    onTestFinished(async () => { await pool.close() })
    let at = 0
    const files: Array<Omit<UnsealFileInit, 'memory' | 'pool'>> = plains.map((plain, i) => {
      const record: ContentRecord = { cid: (cids[i] as ReturnType<CidBuilder['finish']>).toString(), size: plain.byteLength, sealing: 'aes-256-gcm/1', keyId: '0123456789abcdef', keySalt: '', objects: [[packCid, at, (blobs[i] as Buffer).byteLength]] }
      at += (blobs[i] as Buffer).byteLength
      return { record, row: { cid: cids[i] as ReturnType<CidBuilder['finish']>, size: plain.byteLength, mtimeMs: 1_700_000_000_000, profile }, target: join(dir, `file-${i}`), snapshotKey }
    })
    // File 1's record names another object; file 2's reads past the pack's end; file 3's row is
    // one byte shorter than its record says.
    const other = new CidBuilder(profile).update(Buffer.from('other')).finish().toString()
    const one = files[1] as (typeof files)[number]
    files[1] = { ...one, record: { ...one.record, objects: [[other, 0, 10]] } }
    const two = files[2] as (typeof files)[number]
    files[2] = { ...two, record: { ...two.record, objects: [[packCid, pack.byteLength - 10, 100]] } }
    const three = files[3] as (typeof files)[number]
    files[3] = { ...three, row: { ...three.row, size: three.row.size - 1 } }
    for (const f of files) memory.expect(packCid, 1, f.record.objects[0]?.[1] ?? 0)
    const answers = await unsealPackFiles(files, memory, pool)
    expect(answers[0]).not.toBeInstanceOf(Error)
    for (const i of [1, 2, 3]) expect(answers[i]).toBeInstanceOf(ContentIntegrityError)
    expect(fetches).toBe(1)
    expect(memory.held).toBe(0)
    // The good file is verified and held for its sync; nothing of the others is left.
    const good = answers[0] as { job: number, temp: string }
    expect(await pool.syncUnsealed([good.job])).toEqual(new Map())
    expect((await readFile(good.temp)).equals(plains[0] as Buffer)).toBe(true)
    expect(await readdir(dir)).toEqual([good.temp.slice(dir.length + 1)])
  })
})
