import { describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { mkdir, readdir, rename, rm, symlink, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { DirectoryStoreError, PointerNotFoundError } from '../../src/errors.js'
import { DirectoryObjectStore, directoryHome } from '../../src/store/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { within } from '../helpers/wait.js'
import { pointerRegistryConformance } from './pointer-conformance.js'

const CID = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
const POINTER = { snapshotCid: CID, engine: 'cidsync-sqlite/2', namespace: 'default', network: 'mainnet' }

pointerRegistryConformance('a plain directory', async () => ({ pointers: directoryHome(join(await useTempDir(), 'store'), { create: true }).pointers }))

describe('the pointers of a directory store', () => {
  it('are written and read back, each checked', async () => {
    const dir = join(await useTempDir(), 'store')
    const { pointers } = directoryHome(dir, { create: true })
    await expect(pointers.current('default', 'mainnet')).rejects.toBeInstanceOf(PointerNotFoundError)
    await pointers.put(POINTER)
    expect(await pointers.current('default', 'mainnet')).toEqual(POINTER)
    await writeFile(join(dir, 'pointers.json'), JSON.stringify({ '["default","mainnet"]': { ...POINTER, snapshotCid: 'not a cid' } }))
    await expect(pointers.current('default', 'mainnet')).rejects.toThrow(/is malformed/)
  })

  // Each must fail at once: a FIFO would hang the read for good, a device or a sparse file fill memory.
  it('refuse a FIFO, a link, a device or a huge file put there, without waiting or reading it', async () => {
    const dir = join(await useTempDir(), 'store')
    await DirectoryObjectStore.open(dir, { create: true })
    const { pointers } = directoryHome(dir)
    const path = join(dir, 'pointers.json')
    const plant: Array<[string, () => Promise<void>, RegExp]> = [
      ['a FIFO', async () => { execFileSync('mkfifo', [path]) }, /is a FIFO, not a file cidsync wrote/],
      ['a link to a device', async () => { await symlink('/dev/zero', path) }, /is a link, not a file cidsync wrote/],
      ['a sparse file', async () => { await writeFile(path, ''); await truncate(path, 100 * 1024 ** 3) }, /holds more than the 1048576 bytes/]
    ]
    for (const [what, make, message] of plant) {
      await make()
      const read = within(pointers.current('default', 'mainnet'), 10_000, `a read of ${what}`)
      await expect(read, what).rejects.toThrow(message)
      await expect(within(pointers.put(POINTER), 10_000, `a write beside ${what}`), what).rejects.toBeInstanceOf(DirectoryStoreError)
      await rm(path)
    }
  })

  it('a marker that is a FIFO, a link or a huge file is refused at once: no store is opened', async () => {
    const dir = await useTempDir()
    const marker = join(dir, 'cidsync-store.json')
    execFileSync('mkfifo', [marker])
    await expect(within(DirectoryObjectStore.open(dir), 10_000, 'an open past a FIFO')).rejects.toThrow(/is a FIFO/)
    await rm(marker)
    await symlink('/dev/zero', marker)
    await expect(within(DirectoryObjectStore.open(dir), 10_000, 'an open past a link')).rejects.toThrow(/is a link/)
    await rm(marker)
    await writeFile(marker, '')
    await truncate(marker, 100 * 1024 ** 3)
    await expect(within(DirectoryObjectStore.open(dir), 10_000, 'an open past a huge marker')).rejects.toThrow(/holds more than the 4096 bytes/)
  })

  it('are never written into an empty mount point once the disk is pulled out', async () => {
    const root = await useTempDir()
    const mount = join(root, 'usb')
    const home = directoryHome(mount, { create: true })
    await home.pointers.put(POINTER)
    await rename(mount, join(root, 'disk'))
    await mkdir(mount)
    // A pointer that reads as gone must not be put back where the disk was.
    await expect(home.pointers.current('default', 'mainnet')).rejects.toBeInstanceOf(DirectoryStoreError)
    await expect(home.pointers.put(POINTER)).rejects.toThrow(/disk is mounted/)
    expect(await readdir(mount)).toEqual([])
    await rm(mount, { recursive: true })
    await rename(join(root, 'disk'), mount)
    expect(await home.pointers.current('default', 'mainnet')).toEqual(POINTER)
  })
})
