import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { randomBytes } from 'node:crypto'
import * as realFs from 'node:fs'
import { link, mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { contentMasterKey, DurableBatch, type UnsealedFile } from '../../src/custody/index.js'
import { SealPool } from '../../src/custody/seal-pool.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { unsealedFile } from '../helpers/unsealed-file.js'

/** Called before each link the restore makes: a local attacker's turn between two renames of one batch. */
const hooks: { beforeLink?: (from: string, to: string) => void, noProc?: boolean } = {}

vi.mock('node:fs', async (original) => {
  const fs = await original<typeof import('node:fs')>()
  const linkSync = (from: realFs.PathLike, to: realFs.PathLike): void => {
    hooks.beforeLink?.(String(from), String(to))
    fs.linkSync(from, to)
  }
  const readlinkSync = ((path: realFs.PathLike, options?: unknown) => {
    if (hooks.noProc === true && String(path).startsWith('/proc/')) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' })
    return fs.readlinkSync(path, options as undefined)
  }) as typeof fs.readlinkSync
  return { ...fs, default: { ...fs, linkSync, readlinkSync }, linkSync, readlinkSync }
})

const master = contentMasterKey(randomBytes(32))

function pool (): SealPool {
  const p = new SealPool(1)
  onTestFinished(async () => { hooks.beforeLink = undefined; hooks.noProc = undefined; await p.close() })
  return p
}

const unsealed = async (sealer: SealPool, dir: string, name: string, plain: Buffer): Promise<UnsealedFile> => await unsealedFile(sealer, master, dir, name, plain)

const visible = async (dir: string): Promise<string[]> => (await readdir(dir)).filter(n => !n.startsWith('.')).sort()

/** At the first link a restore makes: `dir` moved to `aside`, and a symlink to `elsewhere` put in its place. Answers whether it happened. */
function swapOnFirstLink (dir: string, aside: string, elsewhere: string): () => boolean {
  let swapped = false
  hooks.beforeLink = () => {
    if (swapped) return
    swapped = true
    realFs.renameSync(dir, aside)
    realFs.symlinkSync(elsewhere, dir)
  }
  return () => swapped
}

describe('a durable batch under attack', () => {
  it('places every other file of a directory when one is kept (EEXIST) and one temp was swapped: each refusal its own, with its code', async () => {
    const dir = await useTempDir()
    const sealer = pool()
    const batch = new DurableBatch(sealer, { files: 100, bytes: 1 << 30 })
    const plains = new Map(['a', 'b', 'c', 'd', 'e'].map(n => [n, randomBytes(3000)]))
    const outcome: Record<string, unknown> = {}
    const files = new Map<string, UnsealedFile>()
    for (const [name, plain] of plains) {
      const file = await unsealed(sealer, dir, name, plain)
      files.set(name, file)
      await batch.add(file, (err) => { outcome[name] = err ?? 'ok' })
    }
    // b: the user saved a file there meanwhile. c: its temp replaced by another file of that name.
    // d: its temp replaced by a hard link to a file of someone else's.
    await writeFile(join(dir, 'b'), 'theirs')
    await rm((files.get('c') as UnsealedFile).temp)
    await writeFile((files.get('c') as UnsealedFile).temp, 'decoy')
    const other = join(dir, '..', `victim-${randomBytes(4).toString('hex')}`)
    await writeFile(other, 'victim')
    onTestFinished(async () => { await rm(other, { force: true }) })
    await rm((files.get('d') as UnsealedFile).temp)
    await link(other, (files.get('d') as UnsealedFile).temp)
    await batch.finish()
    expect(outcome.a).toBe('ok')
    expect(outcome.e).toBe('ok')
    expect(outcome.b).toMatchObject({ code: 'ERR_TARGET_EXISTS' })
    expect(outcome.c).toMatchObject({ code: 'ERR_TARGET_PATH' })
    expect(outcome.d).toMatchObject({ code: 'ERR_TARGET_PATH' })
    expect(await visible(dir)).toEqual(['a', 'b', 'e'])
    expect((await readFile(join(dir, 'a'))).equals(plains.get('a') as Buffer)).toBe(true)
    expect((await readFile(join(dir, 'e'))).equals(plains.get('e') as Buffer)).toBe(true)
    expect(await readFile(join(dir, 'b'), 'utf8')).toBe('theirs')
    expect(await readFile(other, 'utf8')).toBe('victim')
    expect((await stat(other)).nlink).toBe(1)
  })

  it('sends nothing through a symlink swapped in between two renames of one batch: the later files go to the checked directory or are refused', async () => {
    const root = await useTempDir()
    const dir = join(root, 'dir')
    const elsewhere = join(root, 'elsewhere')
    await mkdir(dir)
    await mkdir(elsewhere)
    const sealer = pool()
    const batch = new DurableBatch(sealer, { files: 100, bytes: 1 << 30 })
    const outcome: Record<string, unknown> = {}
    for (const name of ['f1', 'f2', 'f3']) await batch.add(await unsealed(sealer, dir, name, randomBytes(2000)), (err) => { outcome[name] = err ?? 'ok' })
    // After the batch's check, before its first rename: the directory moved aside, a link in its place.
    const swapped = swapOnFirstLink(dir, join(root, 'moved'), elsewhere)
    await batch.finish()
    expect(swapped()).toBe(true)
    expect(await readdir(elsewhere)).toEqual([])
    for (const name of ['f1', 'f2', 'f3']) {
      if (outcome[name] === 'ok') expect(await visible(join(root, 'moved'))).toContain(name)
      else expect(outcome[name]).toMatchObject({ code: 'ERR_TARGET_PATH' })
    }
  })

  it('without /proc, refuses the later files of a batch whose directory is swapped for a symlink between their renames', async () => {
    const root = await useTempDir()
    const dir = join(root, 'dir')
    const elsewhere = join(root, 'elsewhere')
    await mkdir(dir)
    await mkdir(elsewhere)
    hooks.noProc = true
    const sealer = pool()
    const batch = new DurableBatch(sealer, { files: 100, bytes: 1 << 30 })
    const outcome: Record<string, unknown> = {}
    const files: UnsealedFile[] = []
    for (const name of ['f1', 'f2', 'f3']) {
      const file = await unsealed(sealer, dir, name, randomBytes(2000))
      files.push(file)
      await batch.add(file, (err) => { outcome[name] = err ?? 'ok' })
    }
    const swapped = swapOnFirstLink(dir, join(root, 'moved'), elsewhere)
    await batch.finish()
    expect(swapped()).toBe(true)
    expect(await readdir(elsewhere)).toEqual([])
    expect(outcome.f2).toMatchObject({ code: 'ERR_TARGET_PATH' })
    expect(outcome.f3).toMatchObject({ code: 'ERR_TARGET_PATH' })
  })
})
