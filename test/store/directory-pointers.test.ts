import { describe, expect, it } from 'vitest'
import { mkdir, readdir, rename, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { DirectoryStoreError } from '../../src/errors.js'
import { directoryHome } from '../../src/store/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const POINTER = { snapshotCid: 'bafkreiaasp6cv6wmquqk6ham7xg2uwih5gvm4gvkstzbx2edcnexkw7xnq', engine: 'cidsync-sqlite/2', namespace: 'default', network: 'mainnet' }

describe('a directory store\'s pointers', () => {
  it('are written and read back', async () => {
    const home = directoryHome(join(await useTempDir(), 'store'), { create: true })
    await home.pointers.put(POINTER)
    expect(await home.pointers.current('default', 'mainnet')).toEqual(POINTER)
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
