import { describe, expect, it } from 'vitest'
import { chmod, lstat, mkdir, realpath, rename, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { finishDirectory, inodeIn } from '../../../src/sync/restore/tree.js'
import { prepareTarget } from '../../../src/sync/restore/safe-target.js'
import { TargetPathError } from '../../../src/errors.js'
import { useTempDir } from '../../helpers/temp-dir.js'

describe('a restore\'s directories and links go only where they were checked', () => {
  it('a directory whose parent was swapped for a symlink after the check is left alone, and so is what the link leads to', async () => {
    const root = await useTempDir()
    await mkdir(join(root, 'target', 'home', 'etc'), { recursive: true })
    await mkdir(join(root, 'victim', 'etc'), { recursive: true })
    await chmod(join(root, 'victim', 'etc'), 0o700)
    const { targetDir } = await prepareTarget(join(root, 'target'), ['home', 'etc', '.'])
    expect(targetDir).toBe(join(await realpath(join(root, 'target')), 'home', 'etc'))
    // Another user swaps `home` for a link to a directory of their choosing.
    await rename(join(root, 'target', 'home'), join(root, 'target', 'moved'))
    await symlink(join(root, 'victim'), join(root, 'target', 'home'))
    await expect(finishDirectory(join(root, 'target', 'home', 'etc'), targetDir, { mode: 0o777 }, 0)).rejects.toBeInstanceOf(TargetPathError)
    expect((await lstat(join(root, 'victim', 'etc'))).mode & 0o777).toBe(0o700)
    // Checked again, the way there is refused.
    await expect(prepareTarget(join(root, 'target'), ['home', 'etc', '.'])).rejects.toBeInstanceOf(TargetPathError)
  })

  it('a hard link is made only of the file restored: a swapped directory hands over another file, refused', async () => {
    const root = await useTempDir()
    await mkdir(join(root, 'target', 'd'), { recursive: true })
    await writeFile(join(root, 'target', 'd', 'first'), 'restored')
    await mkdir(join(root, 'victim'))
    await writeFile(join(root, 'victim', 'first'), 'not yours')
    const { targetDir } = await prepareTarget(join(root, 'target'), ['d', 'first'])
    expect((await inodeIn(join(root, 'target', 'd', 'first'), targetDir)).ino).toBe((await lstat(join(root, 'target', 'd', 'first'))).ino)
    await rename(join(root, 'target', 'd'), join(root, 'target', 'moved'))
    await symlink(join(root, 'victim'), join(root, 'target', 'd'))
    await expect(inodeIn(join(root, 'target', 'd', 'first'), targetDir)).rejects.toBeInstanceOf(TargetPathError)
  })
})

describe('a restore\'s directories', () => {
  it('a directory already as recorded is left alone and said so; one that differs is set', async () => {
    const root = await useTempDir()
    const dir = join(root, 'd')
    await mkdir(dir)
    const expected = await realpath(dir)
    const mtimeMs = 1_700_000_000_123.4567
    expect(await finishDirectory(dir, expected, { mode: 0o750 }, mtimeMs)).toBe(true)
    expect((await lstat(dir)).mode & 0o7777).toBe(0o750)
    expect(await finishDirectory(dir, expected, { mode: 0o750 }, mtimeMs)).toBe(false)
    await chmod(dir, 0o700)
    expect(await finishDirectory(dir, expected, { mode: 0o750 }, mtimeMs)).toBe(true)
    expect((await lstat(dir)).mode & 0o7777).toBe(0o750)
    expect(await finishDirectory(dir, expected, { mode: 0o750 }, mtimeMs + 0.01)).toBe(true)
    expect(await finishDirectory(dir, expected, { mode: 0o750 }, mtimeMs + 0.01)).toBe(false)
  })
})
