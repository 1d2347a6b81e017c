import { describe, it, expect, afterEach } from 'vitest'
import { link, rename, rm, utimes, writeFile } from 'node:fs/promises'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { HashPool } from '../../src/watch/index.js'
import { bytesCid, cidProfile, CID_PROFILE_NAMES } from '../../src/content/index.js'
import { HashError } from '../../src/errors.js'
import { chachaBytes } from '../helpers/chacha-stream.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until, within } from '../helpers/wait.js'

const pools: HashPool[] = []
afterEach(async () => { for (const p of pools.splice(0)) await p.close() })
/** A file this large is split across the threads (set on the pool). */
const SPLIT_BYTES = 48 * 1024 * 1024
const newPool = (init: ConstructorParameters<typeof HashPool>[0]): HashPool => { const p = new HashPool(init); pools.push(p); return p }

describe('the hashing pool', () => {
  it('hashes many small files across threads, each to its own CID', async () => {
    const dir = await useTempDir()
    const pool = newPool({ workers: 2 })
    const files = await Promise.all(Array.from({ length: 300 }, async (_, i) => {
      const path = join(dir, `f${i}`)
      await writeFile(path, `file ${i}`)
      return path
    }))
    const cids = await Promise.all(files.map(async f => (await pool.hash(f, 'kubo-cidv1')).cid))
    expect(cids).toEqual(files.map((_, i) => bytesCid(Buffer.from(`file ${i}`), cidProfile('kubo-cidv1')).toString()))
    // 300 files waiting at once are worth a second thread.
    expect(pool.size).toBe(2)
  })

  it('starts one thread for a few small files or one large one, and a thread a core for one split', async () => {
    const dir = await useTempDir()
    const pool = newPool({ workers: 2, splitBytes: SPLIT_BYTES })
    for (let i = 0; i < 3; i++) await writeFile(join(dir, `f${i}`), `file ${i}`)
    await Promise.all([0, 1, 2].map(async i => await pool.hash(join(dir, `f${i}`), 'kubo-cidv1', { sizeHint: 6 })))
    expect(pool.size).toBe(1)
    // Under the split size, a large file is one job: one thread hashes it.
    const large = join(dir, 'large.bin')
    execFileSync('truncate', ['-s', String(40 * 1024 * 1024), large])
    await pool.hash(large, 'kubo-cidv1', { sizeHint: 40 * 1024 * 1024 })
    expect(pool.size).toBe(1)
    const split = join(dir, 'split.bin')
    execFileSync('truncate', ['-s', String(SPLIT_BYTES), split])
    await pool.hash(split, 'kubo-cidv1', { sizeHint: SPLIT_BYTES })
    expect(pool.size).toBe(2)
  })

  it('shows how much of a large file it has read while it hashes it', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'large.bin')
    const size = 768 * 1024 * 1024
    execFileSync('truncate', ['-s', String(size), path])
    const pool = newPool({ workers: 2 })
    const seen: Array<{ files: number, bytes: number, bytesRead: number }> = []
    let finished = false
    const hashing = pool.hash(path, 'kubo-cidv1', { sizeHint: size }).finally(() => { finished = true })
    while (!finished) {
      seen.push(pool.progress())
      await new Promise(resolve => setTimeout(resolve, 2))
    }
    await hashing
    const partway = seen.filter(p => p.bytes === size && p.bytesRead > 0 && p.bytesRead < size)
    expect(partway.length).toBeGreaterThan(0)
    const reads = partway.map(p => p.bytesRead)
    expect([...reads].sort((a, b) => a - b)).toEqual(reads)
    expect(pool.progress()).toEqual({ files: 0, bytes: 0, bytesRead: 0 })
  })

  // The published 45,613,057-byte vector has a two-level tree: the seam between segments must not show.
  it('splits a large file across threads and gets the published CID', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'v0.bin')
    await writeFile(path, chachaBytes('v0-seed', 45613057))
    const pool = newPool({ workers: 2, splitBytes: 1024 * 1024 })
    expect(await pool.hash(path, 'unixfs-v0-2015', { sizeHint: 45613057 })).toMatchObject({ cid: 'QmV81WL765sC8DXsRhE5fJv2rwhS4icHRaf3J9Zk5FdRnW', size: 45613057 })
  })

  it.each(CID_PROFILE_NAMES)('splits files of awkward sizes the same as hashing them whole (%s)', async (name) => {
    const dir = await useTempDir()
    const profile = cidProfile(name)
    const pool = newPool({ workers: 3, splitBytes: 1 })
    for (const size of [1, profile.chunkSize, profile.chunkSize * 3 + 5, profile.chunkSize * 7]) {
      const bytes = chachaBytes(`split-${size}`, size)
      const path = join(dir, `s${size}`)
      await writeFile(path, bytes)
      expect((await pool.hash(path, name, { sizeHint: size })).cid, `${size} bytes`).toBe(bytesCid(bytes, profile).toString())
    }
  })

  it('refuses a split file whose size moved since it was planned', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'moved')
    await writeFile(path, chachaBytes('moved', 3 * 262144))
    const pool = newPool({ workers: 2, splitBytes: 1 })
    const err = await pool.hash(path, 'kubo-cidv1', { sizeHint: 2 * 262144 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(HashError)
    expect((err as HashError).reason).toBe('ERR_FILE_CHANGED')
  })

  it('answers a missing file and a FIFO with their reasons, without blocking a thread', async () => {
    const dir = await useTempDir()
    const pool = newPool({ workers: 1 })
    await expect(pool.hash(join(dir, 'gone'), 'kubo-cidv1')).rejects.toMatchObject({ reason: 'ENOENT' })
    const fifo = join(dir, 'fifo')
    execFileSync('mkfifo', [fifo])
    await expect(pool.hash(fifo, 'kubo-cidv1')).rejects.toMatchObject({ reason: 'ERR_NOT_A_FILE' })
    await writeFile(join(dir, 'after'), 'still working')
    expect((await pool.hash(join(dir, 'after'), 'kubo-cidv1')).size).toBe(13)
  })

  it('stops idle threads and starts them again for the next file', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'a'), 'a')
    const pool = newPool({ workers: 2, idleTimeoutMs: 50 })
    await pool.hash(join(dir, 'a'), 'kubo-cidv1')
    expect(pool.size).toBe(1)
    await until(() => pool.size === 0 ? true : undefined, 5_000, 'the idle workers to end')
    expect((await pool.hash(join(dir, 'a'), 'kubo-cidv1')).cid).toBe(bytesCid(Buffer.from('a'), cidProfile('kubo-cidv1')).toString())
  })

  it('has room again once what waits for a thread is under its bound, and at once when closed', async () => {
    const dir = await useTempDir()
    const paths = await Promise.all(Array.from({ length: 200 }, async (_, i) => {
      const path = join(dir, `f${i}`)
      await writeFile(path, `file ${i}`)
      return path
    }))
    const pool = newPool({ workers: 1, roomJobs: 8 })
    const hashed = Promise.all(paths.map(async p => await pool.hash(p, 'kubo-cidv1')))
    let roomy = false
    const room = pool.room().then(() => { roomy = true })
    await Promise.resolve()
    expect(roomy).toBe(false)
    await within(room, 10_000, 'room in the pool')
    // A thread holds at most 4 batches of 256: under the bound, what is left is in its hands.
    expect(pool.pending).toBeLessThan(200)
    expect((await within(hashed, 10_000, 'every file hashed')).length).toBe(200)
    await pool.room()
    for (const p of paths) pool.submit(p, 'kubo-cidv1', 0, () => {})
    const closedRoom = pool.room()
    await pool.close()
    await within(closedRoom, 5_000, 'room once closed')
  })
  it('never mixes two files of one size and mtime swapped in while a split file is hashed', async () => {
    const dir = await useTempDir()
    const pool = newPool({ workers: 2, splitBytes: SPLIT_BYTES })
    const [a, b, target, next] = ['a', 'b', 'target', 'next'].map(n => join(dir, n)) as [string, string, string, string]
    await writeFile(a, chachaBytes('swap-a', SPLIT_BYTES))
    await writeFile(b, chachaBytes('swap-b', SPLIT_BYTES))
    // As cp -p or rsync -t leave a copy: the same size and mtime, other bytes.
    const when = new Date('2026-01-01T00:00:00Z')
    await utimes(a, when, when)
    await utimes(b, when, when)
    const whole = new Set([(await pool.hash(a, 'kubo-cidv1', { sizeHint: SPLIT_BYTES })).cid, (await pool.hash(b, 'kubo-cidv1', { sizeHint: SPLIT_BYTES })).cid, 'ERR_FILE_CHANGED'])
    // A new pool a round: its threads start one after another, so the segments open at several
    // moments. The swap lands later each round: before, between and after them.
    for (let round = 0; round < 5; round++) {
      await rm(target, { force: true })
      await link(a, target)
      const fresh = newPool({ workers: 4, splitBytes: SPLIT_BYTES })
      const hashing = fresh.hash(target, 'kubo-cidv1', { sizeHint: SPLIT_BYTES }).then(r => r.cid, (err: HashError) => err.reason)
      await new Promise(resolve => setTimeout(resolve, round * 30))
      await link(b, next)
      await rename(next, target)
      expect(whole, `round ${round}`).toContain(await hashing)
      await fresh.close()
    }
  })

  it('hashes a few small files on its own thread when told it may, starting no thread, as a thread would', async () => {
    const dir = await useTempDir()
    const pool = newPool({ workers: 2, inlineBytes: 64 * 1024 })
    const files = await Promise.all(Array.from({ length: 5 }, async (_, i) => {
      const path = join(dir, `f${i}`)
      await writeFile(path, `small ${i}`)
      return path
    }))
    const results = await Promise.all(files.map(async f => await pool.hash(f, 'kubo-cidv1', { sizeHint: 7 })))
    expect(results.map(r => r.cid)).toEqual(files.map((_, i) => bytesCid(Buffer.from(`small ${i}`), cidProfile('kubo-cidv1')).toString()))
    expect(results.map(r => r.size)).toEqual(files.map(() => 7))
    expect(pool.size).toBe(0)
    expect(pool.hashedBytes).toBe(35)
    // Its failures are a thread's: the same reasons.
    await expect(pool.hash(join(dir, 'gone'), 'kubo-cidv1')).rejects.toMatchObject({ reason: 'ENOENT' })
    const fifo = join(dir, 'fifo')
    execFileSync('mkfifo', [fifo])
    await expect(pool.hash(fifo, 'kubo-cidv1')).rejects.toMatchObject({ reason: 'ERR_NOT_A_FILE' })
    expect(pool.size).toBe(0)
  })

  it('sends to a thread what passes its bound here: a file that grew past 1 MiB since its size was told, and all once the bytes allowed are spent', async () => {
    const dir = await useTempDir()
    const pool = newPool({ workers: 1, inlineBytes: 2 * 1024 * 1024 })
    const grown = join(dir, 'grown.bin')
    const bytes = chachaBytes('grown', 3 * 1024 * 1024)
    await writeFile(grown, bytes)
    // Told it is small: opened here, found large, and hashed whole on a thread.
    const result = await pool.hash(grown, 'kubo-cidv1', { sizeHint: 10 })
    expect(result.cid).toBe(bytesCid(bytes, cidProfile('kubo-cidv1')).toString())
    expect(pool.size).toBe(1)
    await pool.close()
    // A file of no size told counts 4,096 bytes until it is hashed, then its own 8.
    const spent = newPool({ workers: 1, inlineBytes: 4096 + 10 })
    await writeFile(join(dir, 'a'), 'abcdefgh')
    await spent.hash(join(dir, 'a'), 'kubo-cidv1')
    await spent.hash(join(dir, 'a'), 'kubo-cidv1')
    expect(spent.size).toBe(0)
    // 4,090 bytes left: the next file of no size told goes to a thread.
    await spent.hash(join(dir, 'a'), 'kubo-cidv1')
    expect(spent.size).toBe(1)
    expect(spent.hashedBytes).toBe(24)
  })

  it('counts the bytes of new files as it hashes them here: once those allowed are spent, the rest go to a thread', async () => {
    const dir = await useTempDir()
    // A scan tells no size for a file the index does not know: 20 files of 600 KB, told at once.
    const files = await Promise.all(Array.from({ length: 20 }, async (_, i) => {
      const path = join(dir, `new${i}`)
      await writeFile(path, chachaBytes(`new ${i}`, 600_000))
      return path
    }))
    const pool = newPool({ workers: 1, inlineBytes: 2 * 1024 * 1024 })
    const results = await Promise.all(files.map(async f => await pool.hash(f, 'kubo-cidv1')))
    expect(results.map(r => r.cid)).toEqual(files.map((_, i) => bytesCid(chachaBytes(`new ${i}`, 600_000), cidProfile('kubo-cidv1')).toString()))
    expect(pool.size).toBe(1)
    expect(pool.hashedBytes).toBe(20 * 600_000)
  })

  it('answers a file waiting to be hashed here as aborted once the pool closes', async () => {
    const dir = await useTempDir()
    await writeFile(join(dir, 'a'), 'a')
    const pool = newPool({ workers: 1, inlineBytes: 1024 })
    const hashing = expect(pool.hash(join(dir, 'a'), 'kubo-cidv1', { sizeHint: 1 })).rejects.toMatchObject({ code: 'ERR_ABORTED' })
    await pool.close()
    await hashing
  })
})
