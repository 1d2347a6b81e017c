import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { chmod, mkdir, readdir, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { cidProfile } from '../../src/content/index.js'
import { ContentNotFoundError, DirectoryStoreError } from '../../src/errors.js'
import { DirectoryObjectStore } from '../../src/store/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { objectStoreConformance } from './conformance.js'

const PROFILE = cidProfile('kubo-cidv1')
const objectFile = (dir: string, cid: string): string => join(dir, 'objects', cid.slice(-2), cid)

objectStoreConformance('a plain directory', async () => {
  const dir = join(await useTempDir(), 'store')
  const store = await DirectoryObjectStore.open(dir, { create: true })
  return {
    store,
    damage: async (cid) => {
      const path = objectFile(dir, cid)
      const bytes = await readFile(path)
      bytes[bytes.byteLength >> 1] = (bytes[bytes.byteLength >> 1] as number) ^ 1
      await chmod(path, 0o600)
      await writeFile(path, bytes)
    }
  }
})

describe('a directory store', () => {
  it('is private: the directories 0700, the objects 0600', async () => {
    const dir = join(await useTempDir(), 'store')
    const store = await DirectoryObjectStore.open(dir, { create: true })
    const source = join(await useTempDir(), 'in.bin')
    await writeFile(source, randomBytes(100), { mode: 0o644 })
    const { cid } = await store.put(source, PROFILE)
    expect((await stat(dir)).mode & 0o777).toBe(0o700)
    expect((await stat(join(dir, 'objects', cid.slice(-2)))).mode & 0o777).toBe(0o700)
    expect((await stat(objectFile(dir, cid))).mode & 0o777).toBe(0o600)
  })

  it('a disk pulled out after the open: refused as not mounted, nothing written in its place, and back once it is', async () => {
    const root = await useTempDir()
    // The store is the disk's mount point itself: pulled out, an empty directory stays there.
    const mount = join(root, 'usb')
    const store = await DirectoryObjectStore.open(mount, { create: true })
    const source = join(root, 'in.bin')
    await writeFile(source, randomBytes(100))
    const { cid } = await store.put(source, PROFILE)
    await rename(mount, join(root, 'disk'))
    await mkdir(mount)
    await expect(store.put(source, PROFILE)).rejects.toThrow(/is not a cidsync directory store .*disk is mounted/)
    await expect(store.put(source, PROFILE)).rejects.toBeInstanceOf(DirectoryStoreError)
    await expect(store.getBytes(cid, PROFILE)).rejects.toBeInstanceOf(DirectoryStoreError)
    expect(await readdir(mount)).toEqual([])
    // Plugged back in: the same store object works again.
    await rm(mount, { recursive: true })
    await rename(join(root, 'disk'), mount)
    expect(await store.has(cid)).toBe(true)
    await store.put(source, PROFILE)
  })

  it('opens only a directory it made, unless asked to make one', async () => {
    const dir = await useTempDir()
    await expect(DirectoryObjectStore.open(join(dir, 'none'))).rejects.toBeInstanceOf(DirectoryStoreError)
    await writeFile(join(dir, 'cidsync-store.json'), '{"format":"something-else/9"}')
    await expect(DirectoryObjectStore.open(dir, { create: true })).rejects.toThrow(/another format/)
  })

  it('never follows a link or opens a FIFO put where an object should be', async () => {
    const dir = join(await useTempDir(), 'store')
    const store = await DirectoryObjectStore.open(dir, { create: true })
    const source = join(await useTempDir(), 'in.bin')
    await writeFile(source, randomBytes(100))
    const { cid } = await store.put(source, PROFILE)
    // Swapped for a link to the very same bytes: still not followed.
    await writeFile(join(dir, 'elsewhere'), await readFile(source))
    await rm(objectFile(dir, cid))
    await symlink(join(dir, 'elsewhere'), objectFile(dir, cid))
    await expect(store.getBytes(cid, PROFILE)).rejects.toBeInstanceOf(ContentNotFoundError)
    await rm(objectFile(dir, cid))
    const { execFileSync } = await import('node:child_process')
    execFileSync('mkfifo', [objectFile(dir, cid)])
    await expect(store.getBytes(cid, PROFILE)).rejects.toBeInstanceOf(ContentNotFoundError)
    expect(await store.stat(cid)).toBeUndefined()
  })

  it('a put killed midway leaves a temp file that the next open removes once its process is gone', async () => {
    const dir = join(await useTempDir(), 'store')
    await DirectoryObjectStore.open(dir, { create: true })
    // A pid no process has: Linux's pid_max is at most 2^22.
    await writeFile(join(dir, 'tmp', '4194305-00aa.part'), 'half')
    await writeFile(join(dir, 'tmp', `${process.pid}-00bb.part`), 'mine, running')
    const store = await DirectoryObjectStore.open(dir)
    expect((await readdir(join(dir, 'tmp'))).sort()).toEqual([`${process.pid}-00bb.part`])
    expect(await store.has('bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy')).toBe(false)
  })

  it('lists only files named by a CID in their shard; anything else there is not an object', async () => {
    const dir = join(await useTempDir(), 'store')
    const store = await DirectoryObjectStore.open(dir, { create: true })
    const source = join(await useTempDir(), 'in.bin')
    await writeFile(source, randomBytes(100))
    const { cid } = await store.put(source, PROFILE)
    await writeFile(join(dir, 'objects', cid.slice(-2), 'notes.txt'), 'x')
    await mkdir(join(dir, 'objects', 'zz'))
    await writeFile(join(dir, 'objects', 'zz', cid), 'in the wrong shard')
    const cids: string[] = []
    for await (const info of store.list()) cids.push(info.cid)
    expect(cids).toEqual([cid])
  })
})
