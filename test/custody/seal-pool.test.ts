import { describe, expect, it, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CHUNK_BYTES, contentMasterKey, fileKey, sealStream } from '../../src/custody/index.js'
import { SealPool } from '../../src/custody/seal-pool.js'
import { CidBuilder, FileChangedWhileHashingError, ObjectBlocksRecorder, cidProfile } from '../../src/content/index.js'
import { ContentIntegrityError } from '../../src/errors.js'
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

  it('refuses, without blocking, a file swapped for a FIFO or a directory since it was indexed', async () => {
    const dir = await useTempDir()
    const sealer = pool()
    const small = await fileOf(dir, 'small', randomBytes(5000))
    const large = await fileOf(dir, 'large', randomBytes(2 * CHUNK_BYTES))
    const spoolDir = join(dir, 'spool')
    await mkdir(spoolDir)
    const init = { key: fileKey(master, large.cid), spoolDir, partChunks: 1, storedParts: new Map<number, string>(), storePart: async (_i: number, _p: string, _b: number, object: string) => object }
    for (const file of [small.path, large.path]) {
      await rm(file)
      await promisify(execFile)('mkfifo', [file])
    }
    // No writer ever opens these FIFOs: an open that blocked would hold the thread for good.
    await expect(sealer.sealSmall(small, fileKey(master, small.cid))).rejects.toBeInstanceOf(FileChangedWhileHashingError)
    await expect(sealer.sealParts(large, init)).rejects.toBeInstanceOf(FileChangedWhileHashingError)
    await rm(small.path)
    await mkdir(small.path)
    await expect(sealer.sealSmall(small, fileKey(master, small.cid))).rejects.toBeInstanceOf(FileChangedWhileHashingError)
    expect(await readdir(spoolDir)).toEqual([])
  })

  it('open a blob handed over in slabs of any size into a temp file, hashed as written, its mtime set; a changed byte fails the file (ERR_CONTENT_INTEGRITY)', async () => {
    const dir = await useTempDir()
    const sealer = pool()
    const plain = randomBytes(2 * CHUNK_BYTES + 12345)
    const file = await fileOf(dir, 'original', plain)
    const blob = await inProcess(plain, file)
    const shared = (bytes: Buffer): Uint8Array => { const view = new Uint8Array(new SharedArrayBuffer(bytes.byteLength)); view.set(bytes); return view }
    const key = fileKey(master, file.cid)
    const path = join(dir, 'restored')
    const unsealer = sealer.unseal({ path, key, cid: file.cid.toString(), cidBytes: file.cid.bytes, size: plain.byteLength, profile: 'kubo-cidv1', mtimeMs: 1_700_000_000_123, mode: 0o640 })
    let written = 0
    // Slabs cut across chunk boundaries, as a pack's or a part's slabs fall.
    for (const [from, to] of [[0, 1000], [1000, CHUNK_BYTES + 77], [CHUNK_BYTES + 77, blob.byteLength]] as const) written += await unsealer.piece(shared(blob.subarray(from, to)))
    const done = await unsealer.end()
    expect(written).toBe(plain.byteLength)
    expect(done.cid).toBe(file.cid.toString())
    expect((await readFile(path)).equals(plain)).toBe(true)
    const stats = await stat(path)
    expect(stats.ino).toBe(done.inode)
    expect(Math.round(stats.mtimeMs)).toBe(1_700_000_000_123)
    // Verified: given its mode, and held open by its thread until a sync names it.
    expect(stats.mode & 0o777).toBe(0o640)
    expect(await sealer.syncUnsealed([unsealer.id])).toEqual(new Map())
    // The sync answered, the thread owes nothing: it lets the process end (failed before: the sync stayed a job of its thread).
    expect((sealer as unknown as { jobs: Map<number, unknown> }).jobs.size).toBe(0)
    // Each job is synced once: a second sync of it is a failure, never taken for durable.
    expect((await sealer.syncUnsealed([unsealer.id])).get(unsealer.id)).toBeInstanceOf(Error)

    const damaged = Buffer.from(blob)
    damaged[CHUNK_BYTES + 5] = (damaged[CHUNK_BYTES + 5] as number) ^ 1
    const bad = sealer.unseal({ path: join(dir, 'damaged'), key, cid: file.cid.toString(), cidBytes: file.cid.bytes, size: plain.byteLength, profile: 'kubo-cidv1', mtimeMs: 0, mode: 0o644 })
    await expect(bad.piece(shared(damaged))).rejects.toBeInstanceOf(ContentIntegrityError)
    await expect(bad.end()).rejects.toBeInstanceOf(ContentIntegrityError)
    // A file that failed is removed by the thread that made it (its caller's removal could come first).
    expect((await readdir(dir)).sort()).toEqual(['original', 'restored'])
    const given = sealer.unseal({ path: join(dir, 'given-up'), key, cid: file.cid.toString(), cidBytes: file.cid.bytes, size: plain.byteLength, profile: 'kubo-cidv1', mtimeMs: 0, mode: 0o644 })
    await given.cancel()
    await sealer.hashObject([shared(blob)])
    expect((await readdir(dir)).sort()).toEqual(['original', 'restored'])
    // Never a file that exists: the thread creates its temp, and refuses one already there.
    const again = sealer.unseal({ path, key, cid: file.cid.toString(), cidBytes: file.cid.bytes, size: plain.byteLength, profile: 'kubo-cidv1', mtimeMs: 0, mode: 0o644 })
    await expect(again.piece(shared(blob))).rejects.toMatchObject({ code: 'EEXIST' })
  })

  it('open a blob handed over whole in one message; one that hashes to another CID is removed by its thread, and never synced', async () => {
    const dir = await useTempDir()
    const sealer = pool()
    const plain = randomBytes(70_000)
    const file = await fileOf(dir, 'original', plain)
    const blob = await inProcess(plain, file)
    const view = new Uint8Array(new SharedArrayBuffer(blob.byteLength))
    view.set(blob)
    const key = fileKey(master, file.cid)
    const job = { key, cid: file.cid.toString(), cidBytes: file.cid.bytes, size: plain.byteLength, mtimeMs: 1_700_000_000_000, mode: 0o644 }
    // Cut in two, as a blob across two slabs of a pack comes.
    const whole = sealer.unseal({ ...job, path: join(dir, 'whole'), profile: 'kubo-cidv1', whole: [view.subarray(0, 5000), view.subarray(5000)] })
    expect(await whole.end()).toMatchObject({ cid: file.cid.toString() })
    expect(await sealer.syncUnsealed([whole.id])).toEqual(new Map())
    expect((await readFile(join(dir, 'whole'))).equals(plain)).toBe(true)
    // The same bytes hashed under another profile make another CID: not the row's, so not kept.
    const other = sealer.unseal({ ...job, path: join(dir, 'other'), profile: 'unixfs-v0-2015', whole: [view] })
    expect((await other.end()).cid).not.toBe(file.cid.toString())
    expect((await readdir(dir)).sort()).toEqual(['original', 'whole'])
    expect((await sealer.syncUnsealed([other.id])).get(other.id)).toBeInstanceOf(Error)
  })

  it('open several whole blobs sent in one message, each answered, held and synced as its own job: a damaged one fails alone', async () => {
    const dir = await useTempDir()
    const sealer = pool()
    const files = await Promise.all([0, 1, 2, 3].map(async (i) => {
      const plain = randomBytes(3000 + i * 1000)
      const file = await fileOf(dir, `original-${i}`, plain)
      const blob = await inProcess(plain, file)
      const view = new Uint8Array(new SharedArrayBuffer(blob.byteLength))
      view.set(blob)
      return { plain, file, view }
    }))
    // The third blob has a byte changed: its tag does not check.
    const damaged = files[2] as (typeof files)[number]
    damaged.view[100] = (damaged.view[100] as number) ^ 1
    const unsealers = sealer.unsealMany(files.map(({ plain, file, view }, i) => ({ path: join(dir, `back-${i}`), key: fileKey(master, file.cid), cid: file.cid.toString(), cidBytes: file.cid.bytes, size: plain.byteLength, profile: 'kubo-cidv1' as const, mtimeMs: 1_700_000_000_000, mode: 0o640, whole: [view] })))
    const answers = await Promise.allSettled(unsealers.map(async u => await u.end()))
    expect(answers.map(a => a.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled'])
    expect((answers[2] as PromiseRejectedResult).reason).toBeInstanceOf(ContentIntegrityError)
    // Each verified file is held by its own job; a sync of the damaged one fails (its file is gone).
    const ids = unsealers.map(u => u.id)
    const failed = await sealer.syncUnsealed(ids)
    expect([...failed.keys()]).toEqual([ids[2]])
    for (const i of [0, 1, 3]) {
      const { plain } = files[i] as (typeof files)[number]
      expect((await readFile(join(dir, `back-${i}`))).equals(plain)).toBe(true)
      expect((await stat(join(dir, `back-${i}`))).mode & 0o777).toBe(0o640)
    }
    expect((await readdir(dir)).filter(n => n.startsWith('back-')).sort()).toEqual(['back-0', 'back-1', 'back-3'])
  })

  it('hash an object held in slabs to the CID hashing it whole gives', async () => {
    const sealer = pool()
    const bytes = randomBytes(3 * CHUNK_BYTES + 5)
    const slabs = [bytes.subarray(0, 100), bytes.subarray(100, 2 * CHUNK_BYTES), bytes.subarray(2 * CHUNK_BYTES)].map(b => { const v = new Uint8Array(new SharedArrayBuffer(b.byteLength)); v.set(b); return v })
    expect(await sealer.hashObject(slabs)).toBe(new CidBuilder(profile).update(bytes).finish().toString())
  })

  it('hash an object handed over a slab at a time to the CID hashing it whole gives; a closed pool fails its end', async () => {
    const sealer = pool()
    const bytes = randomBytes(3 * CHUNK_BYTES + 5)
    const stream = sealer.hashStream()
    for (let at = 0; at < bytes.byteLength; at += 70_000) {
      const piece = bytes.subarray(at, at + 70_000)
      const slab = new Uint8Array(new SharedArrayBuffer(piece.byteLength))
      slab.set(piece)
      stream.update(slab)
    }
    expect(await stream.finish()).toBe(new CidBuilder(profile).update(bytes).finish().toString())
    const late = sealer.hashStream()
    late.update(new Uint8Array(new SharedArrayBuffer(10)))
    await sealer.close()
    await expect(late.finish()).rejects.toThrow(/stopped/)
  })

  it('hash an object with its blocks as hashing it here records them', async () => {
    const sealer = pool()
    const bytes = randomBytes(3 * 256 * 1024 + 5)
    const slab = new Uint8Array(new SharedArrayBuffer(bytes.byteLength))
    slab.set(bytes)
    const recorder = new ObjectBlocksRecorder()
    const here = new CidBuilder(profile, { onBlock: recorder.onBlock }).update(bytes).finish().toString()
    const there = await sealer.hashObjectBlocks([slab])
    expect(there.cid).toBe(here)
    const expected = recorder.take()
    expect(there.blocks.leaves.map(l => Buffer.from(l).toString('hex'))).toEqual(expected.leaves.map(l => Buffer.from(l).toString('hex')))
    expect(there.blocks.nodes.map(([c, b]) => [Buffer.from(c).toString('hex'), Buffer.from(b).toString('hex')])).toEqual(expected.nodes.map(([c, b]) => [Buffer.from(c).toString('hex'), Buffer.from(b).toString('hex')]))
    expect(there.blocks.leaves).toHaveLength(4)
  })

  it('takes many jobs of one signal without a warning, and an abort still fails every one in flight', async () => {
    const dir = await useTempDir()
    const sealer = pool()
    const warnings: Error[] = []
    const onWarning = (warning: Error): void => { warnings.push(warning) }
    process.on('warning', onWarning)
    onTestFinished(() => { process.off('warning', onWarning) })
    const controller = new AbortController()
    const files = await Promise.all(Array.from({ length: 40 }, async (_, i) => await fileOf(dir, `f${i}`, randomBytes(3000))))
    const sealed = await Promise.all(files.map(async f => await sealer.sealSmall(f, fileKey(master, f.cid), controller.signal)))
    expect(sealed).toHaveLength(40)
    // Forty more at once, aborted while they are with the thread: each fails, none hangs.
    const pending = files.map(async f => await sealer.sealSmall(f, fileKey(master, f.cid), controller.signal).then(() => 'sealed', (err: Error) => err.name))
    controller.abort(new Error('stopped'))
    const outcomes = await Promise.all(pending)
    expect(outcomes.every(o => o === 'sealed' || o === 'Error')).toBe(true)
    expect(outcomes.filter(o => o === 'Error').length).toBeGreaterThan(0)
    // Node reports its warnings on the next turns of the loop.
    await new Promise(resolve => setImmediate(resolve))
    expect(warnings.filter(w => w.name === 'MaxListenersExceededWarning')).toEqual([])
  })

  it('starts its threads ahead when warmed, no more than its size; idle, they keep no process from ending', async () => {
    const sealer = new SealPool(2)
    onTestFinished(async () => { await sealer.close() })
    sealer.warm(5)
    sealer.warm(5)
    expect(await Promise.all([sealer.hashObject([]), sealer.hashObject([])])).toEqual([new CidBuilder(profile).finish().toString(), new CidBuilder(profile).finish().toString()])
    // A process that warms a pool and never closes it ends on its own.
    const dir = await useTempDir()
    const script = join(dir, 'warm.mts')
    await writeFile(script, `import { SealPool } from ${JSON.stringify(fileURLToPath(new URL('../../src/custody/seal-pool.ts', import.meta.url)))}\nnew SealPool(2).warm(2)\nconsole.log('warmed')\n`)
    // Rejects on a non-zero exit, and on a hang once the timeout kills it. tsx keeps no cache in TMPDIR.
    const child = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, TSX_DISABLE_CACHE: '1' } })
    expect(child.stdout).toBe('warmed\n')
  })
})
