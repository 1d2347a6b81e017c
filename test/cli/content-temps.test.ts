import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok } from './content-devices.js'

describe.skipIf(EXTERNAL)('the temp file of a get killed inside a watched folder (processes)', () => {
  it('is not indexed, so never stored or listed as the user\'s file', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    await writeFile(join(a.folder, 'notes.md'), 'mine')
    // What `cidsync get` into this folder leaves when killed between its write and its rename.
    await writeFile(join(a.folder, '.notes.md.cidsync-0123456789ab.part'), 'half of a fetched file')
    const stored = await ok(a, ['snapshot'])
    expect(stored.stderr).toContain('stored 1 file')
    const listed = JSON.parse((await ok(a, ['ls', '--json'])).stdout) as Array<{ path: string }>
    expect(listed.map(e => e.path)).toEqual(['notes.md'])
  }, 120_000)
})
