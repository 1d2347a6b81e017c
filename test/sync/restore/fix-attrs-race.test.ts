import { describe, expect, it } from 'vitest'
import { execFileSync } from 'node:child_process'
import { constants } from 'node:fs'
import { lstat, open, realpath, writeFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { fixFileAttrs } from '../../../src/sync/restore/tree.js'
import { useTempDir } from '../../helpers/temp-dir.js'

describe('fixFileAttrs against a file swapped after it was hashed', () => {
  it('refuses a FIFO put in the file\'s place at once, instead of waiting for a writer', async () => {
    const dir = await realpath(await useTempDir())
    const path = join(dir, 'f.txt')
    await writeFile(path, 'right bytes')
    const ino = (await lstat(path)).ino
    // The swap: between the hash and the fix, a FIFO with the file's name.
    await rm(path)
    execFileSync('mkfifo', [path])
    const fixing = fixFileAttrs(path, dir, ino, { mode: 0o644 }, Date.now(), false).then(() => 'fixed', (err: Error) => err.name)
    let timer: NodeJS.Timeout | undefined
    const waited = new Promise<string>((resolve) => { timer = setTimeout(() => resolve('hung'), 5000) })
    const said = await Promise.race([fixing, waited])
    clearTimeout(timer)
    if (said === 'hung') {
      // Lets the blocked open go (a writer comes), so that no thread stays blocked after the test.
      const writer = await open(path, constants.O_WRONLY | constants.O_NONBLOCK)
      await writer.close()
      await fixing
    }
    expect(said).toBe('TargetPathError')
  }, 20_000)
})
