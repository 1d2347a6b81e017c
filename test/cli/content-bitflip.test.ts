import { describe, expect, it } from 'vitest'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey, tree, writeSomeFiles } from './content-devices.js'

describe.skipIf(EXTERNAL)('bit-flipped stored content (processes)', () => {
  it('restore --files refuses every file whose bytes come back flipped: exit 4, each named, nothing written; once the service is sound a rerun brings all', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    await writeSomeFiles(a.folder, 'docs', { largeBytes: 5 * 1024 * 1024 + 3, small: 5 })
    await ok(a, ['snapshot'])
    await ok(b, ['restore'])
    const to = join(root, 'back')
    // Every gateway answer with one bit flipped: a damaged disk at the service, or on the way.
    service.local.faults.set('gateway', { bitflip: true })
    const refused = await b.run(['restore', '--files', '--to', to])
    service.local.faults.clear()
    expect(refused.code, refused.stderr).toBe(4)
    for (const name of ['large.bin', ...Array.from({ length: 5 }, (_, i) => `small-${i}.txt`)]) {
      expect(refused.stderr).toMatch(new RegExp(`cidsync: notes/docs/${name.replace('.', '\\.')}: .*\\[ERR_[A-Z_]*INTEGRITY\\]`))
    }
    expect(await readdir(join(to, 'notes', 'docs')).catch(() => []), 'nothing written, not even a temp file').toEqual([])

    const sound = await ok(b, ['restore', '--files', '--to', to])
    expect(sound.stdout).toContain('6 files written')
    expect(await tree(join(to, 'notes'))).toEqual(await tree(a.folder))
  }, 300_000)
})
