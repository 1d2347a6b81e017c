import { describe, expect, it } from 'vitest'
import { lstat, rename, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { bytesCid, cidProfile, fileCid, fileCidSync } from '../../src/content/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const profile = cidProfile('kubo-cidv1')

describe('fileCid', () => {
  it('hashes files of every size around a chunk, empty too, like the bytes in memory', async () => {
    const dir = await useTempDir()
    for (const size of [0, 1, profile.chunkSize - 1, profile.chunkSize, profile.chunkSize + 1, 3 * profile.chunkSize + 7]) {
      const bytes = Buffer.alloc(size, size % 251)
      const path = join(dir, `f${size}`)
      await writeFile(path, bytes)
      expect((await fileCid(path, profile)).cid.toString(), `${size} bytes`).toBe(bytesCid(bytes, profile).toString())
    }
  })

  it('refuses a file that holds more bytes than its size says, never hashing it as the shorter file', async () => {
    // /proc files stat as empty and read as text: what a stale size (NFS, FUSE) looks like.
    await expect(fileCid('/proc/self/status', profile)).rejects.toMatchObject({ code: 'ERR_FILE_CHANGED' })
    // The threads' hash, which indexes files and answers `cidsync cid`, the same.
    expect(() => fileCidSync('/proc/self/status', profile)).toThrow(expect.objectContaining({ code: 'ERR_FILE_CHANGED' }))
  })

  it('given the inode an lstat saw, refuses a symlink or another file put there since', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'file')
    await writeFile(path, 'looked at')
    const seen = await lstat(path)
    const inode = { dev: seen.dev, ino: seen.ino }
    expect((await fileCid(path, profile, { inode })).cid.toString()).toBe(bytesCid(Buffer.from('looked at'), profile).toString())
    // The same bytes, through a link swapped in: not followed.
    await writeFile(join(dir, 'elsewhere'), 'looked at')
    await rename(path, join(dir, 'moved'))
    await symlink(join(dir, 'elsewhere'), path)
    await expect(fileCid(path, profile, { inode })).rejects.toMatchObject({ code: 'ELOOP' })
    // Another file renamed over it.
    await rename(join(dir, 'elsewhere'), path)
    await expect(fileCid(path, profile, { inode })).rejects.toMatchObject({ code: 'ERR_FILE_CHANGED' })
  })
})
