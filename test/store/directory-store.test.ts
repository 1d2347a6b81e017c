import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { chmod, mkdir, readdir, readFile, rename, rm, stat, symlink, truncate, utimes, writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { cidProfile } from '../../src/content/index.js'
import { ContentNotFoundError, DirectoryStoreError, IntegrityError } from '../../src/errors.js'
import { DirectoryObjectStore, directoryHome, type StoreProgressEvent } from '../../src/store/index.js'
import { FOREIGN_TEMP_MS } from '../../src/store/directory-temps.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { objectStoreConformance } from './conformance.js'

const PROFILE = cidProfile('kubo-cidv1')
const objectFile = (dir: string, cid: string): string => join(dir, 'objects', cid.slice(-2), cid)

async function aFile (bytes: Buffer): Promise<string> {
  const path = join(await useTempDir(), 'in.bin')
  await writeFile(path, bytes)
  return path
}

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

  it('a put killed midway leaves a temp file that a later put removes once its process is gone; another host\'s once a day old', async () => {
    const dir = join(await useTempDir(), 'store')
    await DirectoryObjectStore.open(dir, { create: true })
    const host = hostname().replace(/[^A-Za-z0-9.-]/g, '-').slice(0, 64)
    // A pid no process has: Linux's pid_max is at most 2^22.
    await writeFile(join(dir, 'tmp', `${host}_4194305_00aa.part`), 'half')
    await writeFile(join(dir, 'tmp', `${host}_${process.pid}_00bb.part`), 'mine, running')
    // A NAS written by two hosts: the other's pid means nothing here, so only its age counts.
    await writeFile(join(dir, 'tmp', 'other-host_4194305_00cc.part'), 'its put, running')
    await writeFile(join(dir, 'tmp', 'other-host_4194305_00dd.part'), 'its put, long dead')
    const old = new Date(Date.now() - 2 * FOREIGN_TEMP_MS)
    await utimes(join(dir, 'tmp', 'other-host_4194305_00dd.part'), old, old)
    const store = await DirectoryObjectStore.open(dir)
    expect(await store.has('bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy')).toBe(false)
    await store.put(await aFile(randomBytes(10)), PROFILE)
    expect((await readdir(join(dir, 'tmp'))).sort()).toEqual([`${host}_${process.pid}_00bb.part`, 'other-host_4194305_00cc.part'].sort())
  })

  it('a delete killed with an object moved aside: the next delete puts it back once the process is gone', async () => {
    const dir = join(await useTempDir(), 'store')
    const first = await DirectoryObjectStore.open(dir, { create: true })
    const host = hostname().replace(/[^A-Za-z0-9.-]/g, '-').slice(0, 64)
    const [dead, running, taken] = await Promise.all([100, 200, 300].map(async n => (await first.put(await aFile(randomBytes(n)), PROFILE)).cid))
    // As a delete leaves it when killed between its move and its decision (a pid no process has).
    await rename(objectFile(dir, dead as string), join(dir, 'tmp', `${host}_4194305_00aa.${dead as string}.aside`))
    // One of a delete still running in a live process: its own decision stands.
    await rename(objectFile(dir, running as string), join(dir, 'tmp', `${host}_${process.ppid}_00bb.${running as string}.aside`))
    // One whose object was put again since: the newer file stays, the aside goes.
    await writeFile(join(dir, 'tmp', `${host}_4194305_00cc.${taken as string}.aside`), 'an older copy')
    const store = await DirectoryObjectStore.open(dir)
    expect(await store.has(dead as string)).toBe(false)
    expect(await store.deleteMany([], { storedBefore: Date.now() })).toEqual({ removed: [], refused: [] })
    const other = (await store.put(await aFile(randomBytes(50)), PROFILE)).cid
    expect(await store.deleteMany([other], { storedBefore: Date.now() + 60_000 })).toEqual({ removed: [other], refused: [] })
    expect(await store.has(dead as string)).toBe(true)
    expect((await store.getBytes(dead as string, PROFILE)).length).toBe(1)
    expect(await store.has(running as string)).toBe(false)
    expect((await store.getBytes(taken as string, PROFILE)).length).toBe(1)
    expect(await readdir(join(dir, 'tmp'))).toEqual([`${host}_${process.ppid}_00bb.${running as string}.aside`])
  })

  it('an aside named by this pid but left by an earlier process (a restarted container keeps its pid): put back', async () => {
    const dir = join(await useTempDir(), 'store')
    const first = await DirectoryObjectStore.open(dir, { create: true })
    const host = hostname().replace(/[^A-Za-z0-9.-]/g, '-').slice(0, 64)
    const cid = (await first.put(await aFile(randomBytes(100)), PROFILE)).cid
    // A daemon run as pid 1 killed mid delete comes back as pid 1 on the same host: no delete here holds this aside.
    await rename(objectFile(dir, cid), join(dir, 'tmp', `${host}_${process.pid}_00dd.${cid}.aside`))
    const store = await DirectoryObjectStore.open(dir)
    const other = (await store.put(await aFile(randomBytes(50)), PROFILE)).cid
    expect(await store.deleteMany([other], { storedBefore: Date.now() + 60_000 })).toEqual({ removed: [other], refused: [] })
    expect(await store.has(cid)).toBe(true)
    expect(await readdir(join(dir, 'tmp'))).toEqual([])
  })

  it('a read finds an object a delete has moved aside while it decides, and checks its bytes as any read', async () => {
    const dir = join(await useTempDir(), 'store')
    const store = await DirectoryObjectStore.open(dir, { create: true })
    const host = hostname().replace(/[^A-Za-z0-9.-]/g, '-').slice(0, 64)
    const bytes = randomBytes(300)
    const { cid } = await store.put(await aFile(bytes), PROFILE)
    // As a delete leaves it between its move and its decision (its process still running).
    await rename(objectFile(dir, cid), join(dir, 'tmp', `${host}_${process.ppid}_00ee.${cid}.aside`))
    expect(Buffer.concat(await store.getBytes(cid, PROFILE)).equals(bytes)).toBe(true)
    // Other bytes under an aside's name are refused, never served.
    const other = (await store.put(await aFile(randomBytes(200)), PROFILE)).cid
    await rm(objectFile(dir, other))
    await writeFile(join(dir, 'tmp', `${host}_${process.ppid}_00ff.${other}.aside`), 'not those bytes')
    await expect(store.getBytes(other, PROFILE)).rejects.toBeInstanceOf(IntegrityError)
  })

  it('reads write nothing: a store made read-only, without tmp/, or with a folder planted in it still restores', async () => {
    const dir = join(await useTempDir(), 'store')
    const cid = (await (await DirectoryObjectStore.open(dir, { create: true })).put(await aFile(randomBytes(100)), PROFILE)).cid
    await rm(join(dir, 'tmp'), { recursive: true })
    const reader = await DirectoryObjectStore.open(dir)
    expect((await reader.getBytes(cid, PROFILE)).length).toBe(1)
    await expect(stat(join(dir, 'tmp'))).rejects.toThrow(/ENOENT/)
    // A folder under a dead temp's name (another user's, or a damaged disk's) stops nothing.
    await mkdir(join(dir, 'tmp', '4194305-00aa.part'), { recursive: true })
    await mkdir(join(dir, 'tmp', 'host_4194305_00aa.part'))
    const again = await DirectoryObjectStore.open(dir)
    expect((await again.getBytes(cid, PROFILE)).length).toBe(1)
    await again.put(await aFile(randomBytes(10)), PROFILE)
    expect((await readdir(join(dir, 'tmp'))).sort()).toEqual(['4194305-00aa.part', 'host_4194305_00aa.part'])
  })

  it('never writes through a link put where tmp/, objects/ or a shard should be', async () => {
    const dir = join(await useTempDir(), 'store')
    const elsewhere = await useTempDir()
    const store = await DirectoryObjectStore.open(dir, { create: true })
    const source = await aFile(randomBytes(100))
    const { cid } = await store.put(source, PROFILE)
    const shard = join(dir, 'objects', cid.slice(-2))
    for (const planted of [join(dir, 'tmp'), join(dir, 'objects'), shard]) {
      const aside = `${planted}.aside`
      await rename(planted, aside)
      await symlink(elsewhere, planted)
      await expect(store.put(source, PROFILE), planted).rejects.toThrow(/is a link, not a directory of the store: nothing is written through it/)
      expect(await readdir(elsewhere), planted).toEqual([])
      await rm(planted)
      await rename(aside, planted)
    }
    await expect(store.put(source, PROFILE)).resolves.toEqual({ cid, size: 100 })
  })

  it('names a failed write by the store and its cause, never by a descriptor', async () => {
    const dir = join(await useTempDir(), 'store')
    const store = await DirectoryObjectStore.open(dir, { create: true })
    const source = await aFile(randomBytes(100))
    const { cid } = await store.put(source, PROFILE)
    await rm(objectFile(dir, cid))
    await mkdir(join(objectFile(dir, cid), 'inside'), { recursive: true })
    const err = await store.put(source, PROFILE).then(() => undefined, (e: unknown) => e as Error)
    expect(err).toBeInstanceOf(DirectoryStoreError)
    expect(err?.message).toMatch(new RegExp(`^could not write to the directory store ${dir} \\((EISDIR|ENOTEMPTY) on rename\\): check that its disk is mounted, writable and has room$`))
    await rm(join(dir, 'objects', cid.slice(-2)), { recursive: true })
    await writeFile(join(dir, 'objects', cid.slice(-2)), 'a file where a folder should be')
    await expect(store.put(source, PROFILE)).rejects.toThrow(`${join(dir, 'objects', cid.slice(-2))} is a file, not a directory of the store`)
  })

  it('takes no link for an object: has, stat and list do not, as a read does not', async () => {
    const dir = join(await useTempDir(), 'store')
    const store = await DirectoryObjectStore.open(dir, { create: true })
    const source = await aFile(randomBytes(100))
    const { cid } = await store.put(source, PROFILE)
    await rm(objectFile(dir, cid))
    await symlink(source, objectFile(dir, cid))
    expect(await store.has(cid)).toBe(false)
    expect(await store.stat(cid)).toBeUndefined()
    for await (const info of store.list()) expect.fail(`listed ${info.cid}`)
    await expect(store.getBytes(cid, PROFILE)).rejects.toBeInstanceOf(ContentNotFoundError)
  })

  it('refuses a file larger than a read accepts by its size, before a byte is read', async () => {
    const dir = join(await useTempDir(), 'store')
    const store = await DirectoryObjectStore.open(dir, { create: true })
    const { cid } = await store.put(await aFile(randomBytes(100)), PROFILE)
    // Sparse: as large as a disk, holding nothing.
    await truncate(objectFile(dir, cid), 100 * 1024 ** 3)
    const read = async (options: { maxBytes?: number }): Promise<number> => {
      const stop = new AbortController()
      let received = 0
      const onProgress = (event: StoreProgressEvent): void => { if (event.type === 'store:get:progress') { received = event.detail.received; stop.abort() } }
      await expect(store.getInto(cid, PROFILE, async (bytes) => { for await (const chunk of bytes) void chunk }, { ...options, onProgress, signal: stop.signal })).rejects.toBeInstanceOf(IntegrityError)
      return received
    }
    expect(await read({ maxBytes: 100 })).toBe(0)
    // No size named: no more than a gateway's answer is taken.
    expect(await read({})).toBe(0)
    await expect(store.getBytes(cid, PROFILE)).rejects.toThrow(/holds more than the 4294967296 bytes/)
  })

  it('an unmounted disk: once the marker is gone, nothing is written in its place', async () => {
    const mount = join(await useTempDir(), 'usb')
    const { objects, pointers } = directoryHome(mount, { create: true })
    const source = await aFile(randomBytes(100))
    const { cid } = await objects.put(source, PROFILE)
    const pointer = { snapshotCid: cid, engine: 'cidsync-sqlite/2', namespace: 'default', network: 'mainnet' }
    await pointers.put(pointer)
    // The disk goes; its mount point stays, empty.
    await rename(mount, `${mount}.disk`)
    await mkdir(mount)
    await expect(objects.put(source, PROFILE)).rejects.toThrow(/not a cidsync directory store .*disk is mounted/)
    await expect(pointers.put(pointer)).rejects.toBeInstanceOf(DirectoryStoreError)
    // Nor is what the empty mount point lacks taken for the store's: the pointer is not "none".
    await expect(pointers.current('default', 'mainnet')).rejects.toBeInstanceOf(DirectoryStoreError)
    await expect(objects.getBytes(cid, PROFILE)).rejects.toBeInstanceOf(DirectoryStoreError)
    expect(await readdir(mount)).toEqual([])
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
