import { describe, expect, it } from 'vitest'
import { readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey, tree } from './content-devices.js'

describe.skipIf(EXTERNAL)('a file whose name is not UTF-8, in a storing folder (processes)', () => {
  it('cannot be a row, so it is not stored: snapshot says so, naming it losslessly, and does not claim the folder whole', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    await writeFile(join(a.folder, 'good.txt'), 'a name in UTF-8')
    // Latin-1 "café.txt", as an old disk or archive may hold it: 0xe9 alone is not UTF-8.
    const bad = Buffer.concat([Buffer.from(`${a.folder}/caf`), Buffer.from([0xe9]), Buffer.from('.txt')])
    await writeFile(bad, 'a name in Latin-1')
    const stored = await a.run(['snapshot'])
    // Published all the same (the index holds every other file), but not a success: it is named, with what to do.
    expect(stored.stdout).toMatch(/^baf\w+ {2}1 entry/)
    expect(stored.stderr).toContain('cidsync: not stored: notes/caf\\xe9.txt: not indexed, so not stored: its name is not valid UTF-8: rename it to index it')
    expect(stored.stderr).toContain('[ERR_NAME_NOT_UTF8]')
    expect(stored.code, stored.stderr).toBe(1)
    await ok(b, ['restore'])
    const to = join(root, 'back')
    await ok(b, ['restore', '--files', '--to', to])
    expect([...(await tree(join(to, 'notes'))).keys()]).toEqual(['good.txt'])

    // Renamed as the advice says: stored, and back on the other device with its bytes.
    await rename(bad, join(a.folder, 'café.txt'))
    const renamed = await ok(a, ['snapshot'])
    expect(renamed.stderr).toContain('stored 1 file')
    await ok(b, ['restore', '--force'])
    await ok(b, ['restore', '--files', '--to', to])
    expect(await readFile(join(to, 'notes', 'café.txt'), 'utf8')).toBe('a name in Latin-1')
  }, 300_000)
})
