import { execFileSync } from 'node:child_process'
import { chmod, mkdir, mkdtemp, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cidProfile, fileCid } from '../../../src/content/index.js'
import type { Entry } from '../../../src/index/index.js'
import { whatIsThere, type ThereInit } from '../../../src/sync/restore/what-is-there.js'

const profile = cidProfile('kubo-cidv1')
const MTIME = Date.UTC(2026, 0, 2, 3, 4, 5)

describe('what a restore finds at a file\'s target before it fetches', () => {
  let dir: string
  let target: string
  let row: Entry
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cidsync-there-'))
    target = join(dir, 'a.txt')
    await writeFile(join(dir, 'source'), 'the bytes of record\n')
    const cid = (await fileCid(join(dir, 'source'), profile)).cid.toString()
    row = { deviceId: 'dev', folder: 'f', path: 'a.txt', cid, cidProfile: 'kubo-cidv1', size: 20, mtimeMs: MTIME, deleted: false, meta: { kind: 'file', mode: 0o640 } } as unknown as Entry
  })
  afterEach(async () => { await rm(dir, { recursive: true, force: true }) })
  const look = async (more: Partial<ThereInit> = {}): ReturnType<typeof whatIsThere> => await whatIsThere({
    row, profile, attrs: { mode: 0o640 }, target, targetDir: dir, made: false, overwrite: false, mine: () => undefined, stored: () => false, ...more
  })
  const right = async (mode = 0o640): Promise<void> => {
    await writeFile(target, 'the bytes of record\n', { mode })
    await chmod(target, mode)
    await utimes(target, MTIME / 1000, MTIME / 1000)
  }

  it('fetches into an empty place, and does not look in a directory this run made', async () => {
    expect(await look()).toEqual({ kind: 'fetch', replace: false })
    await writeFile(target, 'other')
    expect(await look({ made: true })).toEqual({ kind: 'fetch', replace: false })
  })

  it('leaves the right file as it is, and gives the right bytes their recorded mode and mtime in place', async () => {
    await right()
    expect(await look()).toEqual({ kind: 'done', outcome: 'already-there' })
    await utimes(target, 1, 1)
    await chmod(target, 0o600)
    expect(await look()).toEqual({ kind: 'done', outcome: 'written' })
    const after = await stat(target)
    expect(after.mode & 0o777).toBe(0o640)
    expect(after.mtimeMs).toBe(MTIME)
  })

  it('fetches the right bytes again onto an inode of their own where others could have written them', async () => {
    await right(0o666)
    expect(await look()).toEqual({ kind: 'fetch', replace: true })
  })

  it('keeps a local change, and replaces a version of record or with --overwrite', async () => {
    await writeFile(target, 'a local change\n')
    const kept = await look()
    expect(kept.kind).toBe('kept')
    expect(kept.kind === 'kept' && kept.reason).toMatch(/no publish in this index holds.*--overwrite/)
    expect(await look({ overwrite: true })).toEqual({ kind: 'fetch', replace: true })
    expect(await look({ stored: () => true })).toEqual({ kind: 'fetch', replace: true })
    const local = (await fileCid(target, profile)).cid.toString()
    expect(await look({ mine: () => ({ ...row, cid: local }) })).toEqual({ kind: 'fetch', replace: true })
  })

  it('keeps what is not a regular file, but replaces a symlink of record', async () => {
    await mkdir(target)
    expect(await look()).toEqual({ kind: 'kept', reason: `${target} is a directory, not a regular file: move it aside and run again` })
    // Kept with --overwrite too: a file is never renamed over a directory.
    expect((await look({ overwrite: true })).kind).toBe('kept')
    await rm(target, { recursive: true })
    execFileSync('mkfifo', [target])
    expect(await look({ overwrite: true })).toEqual({ kind: 'kept', reason: `${target} is not a regular file (a FIFO, a socket or a device): move it aside and run again` })
    await rm(target)
    await symlink('elsewhere', target)
    expect(await look()).toEqual({ kind: 'kept', reason: `${target} is a symlink this device did not record: add --overwrite to replace it` })
    const link = { ...row, cid: null, meta: { kind: 'symlink', target: 'elsewhere' } } as unknown as Entry
    expect(await look({ mine: () => link })).toEqual({ kind: 'fetch', replace: true })
    expect(await look({ overwrite: true })).toEqual({ kind: 'fetch', replace: true })
  })

  it('with --overwrite, replaces a file of another size unread: a sparse terabyte there costs nothing', async () => {
    execFileSync('truncate', ['-s', String(1024 ** 4), target])
    expect(await look({ overwrite: true })).toEqual({ kind: 'fetch', replace: true })
    // Without --overwrite it must be read to know whether a publish holds it: a small one here.
    await writeFile(target, 'a local change')
    expect(await look()).toMatchObject({ kind: 'kept' })
  })
})
