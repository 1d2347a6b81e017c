import { describe, expect, it } from 'vitest'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey } from './content-devices.js'
import { repackedAndDeleted, RETENTION, AT_THIRD } from './repack-devices.js'
import { sha } from './retention-devices.js'

describe.skipIf(EXTERNAL)('a whole-history export after a repack, imported elsewhere', () => {
  it('brings a publish from before the repack back on a fresh service', async () => {
    const root = await useTempDir()
    const { a, v3 } = await repackedAndDeleted(root)
    const car = join(root, 'all.car')
    await ok(a, ['export', '--car', car, '--content'])
    const other = await localServiceUnderTest({ dir: join(root, 'service2') })
    const b = await contentDevice(root, other, 'b', RETENTION)
    await shareKey(a, b)
    await ok(b, ['import', '--car', car])
    await ok(b, ['restore', '--at', AT_THIRD])
    const back = await b.run(['restore', '--files', '--to', join(root, 'back')])
    expect(back.code, back.stderr).toBe(0)
    for (const [name, hash] of v3) expect(sha(await readFile(join(root, 'back', 'notes', name))), name).toBe(hash)
  }, 300_000)
})
