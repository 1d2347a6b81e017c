import { describe, expect, it } from 'vitest'
import { existsSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { makeDirs, makeDirsSync } from '../../src/util/make-dirs.js'
import { useTempDir } from '../helpers/temp-dir.js'

describe('making a dir and its missing parents', () => {
  it('makes every missing level with the mode asked for, and leaves what exists', async () => {
    const dir = await useTempDir()
    makeDirsSync(join(dir, 'a', 'b', 'c'), 0o700)
    expect(statSync(join(dir, 'a', 'b', 'c')).isDirectory()).toBe(true)
    expect(statSync(join(dir, 'a')).mode & 0o777).toBe(0o700)
    makeDirsSync(join(dir, 'a', 'b', 'c'), 0o700)
    await makeDirs(join(dir, 'x', 'y'), 0o700)
    await makeDirs(join(dir, 'x', 'y'), 0o700)
    expect(statSync(join(dir, 'x', 'y')).mode & 0o777).toBe(0o700)
  })

  it('fails, naming it, under a file instead of making anything', async () => {
    const dir = await useTempDir()
    writeFileSync(join(dir, 'file'), 'x')
    expect(() => { makeDirsSync(join(dir, 'file', 'sub')) }).toThrow(/ENOTDIR/)
    await expect(makeDirs(join(dir, 'file', 'sub'))).rejects.toThrow(/ENOTDIR/)
  })

  it.runIf(existsSync('/proc/self'))('fails under /proc, where Node\'s own recursive mkdir loops forever', async () => {
    expect(() => { makeDirsSync('/proc/cidsync-not-here/sub', 0o700) }).toThrow(/ENOENT/)
    await expect(makeDirs('/proc/cidsync-not-here/sub', 0o700)).rejects.toThrow(/ENOENT/)
  })
})
