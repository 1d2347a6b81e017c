import { describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { readdir, readFile, realpath } from 'node:fs/promises'
import { join } from 'node:path'
import { seal } from '../../src/snapshot/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { canNameDescriptors, recordHandleSyncs } from '../helpers/sync-probe.js'

describe('a sealed file', () => {
  it.runIf(canNameDescriptors())('is fsynced whole under a temp name, renamed, then its directory fsynced', async () => {
    const dir = await realpath(await useTempDir())
    const path = join(dir, 'segment.sealed')
    // Whether the file had its final name when each sync ran.
    const named: boolean[] = []
    const synced = await recordHandleSyncs(() => named.push(existsSync(path)))
    await seal({ path, header: { format: 2, engine: 'cidsync-sqlite/2', kind: 'manifest', compression: 'br' }, body: { bytes: Buffer.from('{"a":1}') }, encryption: 'aes-256-gcm', stateDir: dir })
    // The temp's bytes first (its name then), the directory after the rename: a power cut leaves the old name or the whole file.
    expect(synced).toEqual([`${path}.${process.pid}.part`, dir])
    expect(named).toEqual([false, true])
    expect((await readFile(path)).subarray(0, 8).toString('latin1')).toBe('CIDSNAP\0')
    expect((await readdir(dir)).filter(name => name.endsWith('.part'))).toEqual([])
  })
})
