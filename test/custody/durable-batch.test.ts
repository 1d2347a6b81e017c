import { describe, expect, it, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, readdir, rename, stat, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { contentMasterKey, DurableBatch, type UnsealedFile } from '../../src/custody/index.js'
import { HELD_BATCHES } from '../../src/custody/durable-batch.js'
import { SealPool } from '../../src/custody/seal-pool.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { unsealedFile } from '../helpers/unsealed-file.js'

const master = contentMasterKey(randomBytes(32))

function pool (): SealPool {
  const p = new SealPool(1)
  onTestFinished(async () => { await p.close() })
  return p
}

const unsealed = async (sealer: SealPool, dir: string, name: string, plain: Buffer): Promise<UnsealedFile> => await unsealedFile(sealer, master, dir, name, plain)

const names = async (dir: string): Promise<string[]> => (await readdir(dir)).sort()

describe('a durable batch', () => {
  it('renames verified files only once their batch is synced: until then they stay temps, and each ends whole under its name', async () => {
    const dir = await useTempDir()
    const sealer = pool()
    const batch = new DurableBatch(sealer, { files: 2, bytes: 1 << 30 })
    const plains = [0, 1, 2].map(() => randomBytes(10_000))
    const settled: Array<unknown> = []
    await batch.add(await unsealed(sealer, dir, 'a', plains[0] as Buffer), (err) => { settled.push(err ?? 'ok') })
    // One file: the batch is not full, nothing is synced, so nothing takes a final name.
    expect((await names(dir)).filter(n => !n.startsWith('.'))).toEqual([])
    await batch.add(await unsealed(sealer, dir, 'b', plains[1] as Buffer), (err) => { settled.push(err ?? 'ok') })
    await batch.add(await unsealed(sealer, dir, 'c', plains[2] as Buffer), (err) => { settled.push(err ?? 'ok') })
    await batch.finish()
    expect(settled).toEqual(['ok', 'ok', 'ok'])
    expect(await names(dir)).toEqual(['a', 'b', 'c'])
    for (const [i, name] of ['a', 'b', 'c'].entries()) {
      expect((await readFile(join(dir, name))).equals(plains[i] as Buffer)).toBe(true)
      expect((await stat(join(dir, name))).mode & 0o777).toBe(0o644)
    }
  })

  it('keeps a file made at the target while the batch waited (no --overwrite): the restored one is refused, its temp removed; with replace it is replaced', async () => {
    const dir = await useTempDir()
    const sealer = pool()
    const batch = new DurableBatch(sealer, { files: 10, bytes: 1 << 30 })
    const outcome: Record<string, unknown> = {}
    await batch.add(await unsealed(sealer, dir, 'mine', randomBytes(5000)), (err) => { outcome.mine = err ?? 'ok' })
    const replaced = await unsealed(sealer, dir, 'old', randomBytes(5000))
    await batch.add({ ...replaced, replace: true }, (err) => { outcome.old = err ?? 'ok' })
    // The user saves a file of their own where the restore will put one; another was there all along.
    await writeFile(join(dir, 'mine'), 'the user\'s own words')
    await writeFile(join(dir, 'old'), 'to be replaced')
    await batch.finish()
    expect(outcome.mine).toMatchObject({ code: 'ERR_TARGET_EXISTS' })
    expect(outcome.old).toBe('ok')
    expect(await readFile(join(dir, 'mine'), 'utf8')).toBe('the user\'s own words')
    expect((await readFile(join(dir, 'old'))).byteLength).toBe(5000)
    expect(await names(dir)).toEqual(['mine', 'old'])
  })

  it('refuses a file whose directory was swapped for a symlink before its batch was renamed: nothing goes through the link, nothing takes a final name', async () => {
    const root = await useTempDir()
    const dir = join(root, 'dir')
    const elsewhere = join(root, 'elsewhere')
    await mkdir(dir)
    await mkdir(elsewhere)
    const sealer = pool()
    const batch = new DurableBatch(sealer, { files: 10, bytes: 1 << 30 })
    const file = await unsealed(sealer, dir, 'f', randomBytes(5000))
    const outcome: unknown[] = []
    await batch.add(file, (err) => { outcome.push(err) })
    // The real directory moved aside and a link put in its place, pointing somewhere else.
    await rename(dir, join(root, 'moved'))
    await symlink(elsewhere, dir)
    await batch.finish()
    expect(outcome[0]).toMatchObject({ code: 'ERR_TARGET_PATH' })
    expect(await readdir(elsewhere)).toEqual([])
    // The moved directory keeps the temp it was given (where it went is not known), never a final name.
    expect((await readdir(join(root, 'moved'))).filter(n => !n.startsWith('.'))).toEqual([])
  })

  it('removes the temps of files it was given up on (a run that failed), once their threads are closed', async () => {
    const dir = await useTempDir()
    const sealer = pool()
    const batch = new DurableBatch(sealer, { files: 10, bytes: 1 << 30 })
    const settled: unknown[] = []
    await batch.add(await unsealed(sealer, dir, 'x', randomBytes(3000)), (err) => { settled.push(err) })
    expect((await names(dir)).length).toBe(1)
    await batch.drain()
    await sealer.close()
    await batch.abandon()
    expect(await names(dir)).toEqual([])
    expect(settled).toEqual([])
  })

  it('holds at most HELD_BATCHES batches of files open however many callers add at once: the others wait for room', async () => {
    const dir = await useTempDir()
    const sealer = pool()
    const files = 2
    const callers = 8
    const each = 12
    const batch = new DurableBatch(sealer, { files, bytes: 1 << 30 })
    const made = await Promise.all(Array.from({ length: callers * each }, async (_, i) => await unsealed(sealer, dir, `f${i}`, randomBytes(3000))))
    let held = 0
    let most = 0
    await Promise.all(Array.from({ length: callers }, async (_, c) => {
      for (let k = 0; k < each; k++) {
        held++
        most = Math.max(most, held)
        await batch.add(made[c * each + k] as UnsealedFile, (err) => { expect(err).toBeUndefined(); held-- })
      }
    }))
    await batch.finish()
    expect(held).toBe(0)
    // The batches held, and one file more from each caller that added before it saw there was no room.
    expect(most).toBeLessThanOrEqual(HELD_BATCHES * files + callers)
    expect((await names(dir)).filter(n => !n.startsWith('.'))).toHaveLength(callers * each)
  })
})
