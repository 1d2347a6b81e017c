import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey, tree, writeSomeFiles } from './content-devices.js'

describe.skipIf(EXTERNAL)('restore --files stopped by Ctrl-C (processes)', () => {
  it('exits 130 naming the files in place, leaves no temp file, and a second run brings the rest', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    for (let i = 0; i < 2; i++) await writeSomeFiles(a.folder, `dir-${i}`, { largeBytes: 3 * 1024 * 1024 + i, small: 40 })
    await ok(a, ['snapshot'])
    await shareKey(a, b)
    await ok(b, ['restore'])
    const to = join(root, 'back')
    // SIGINT sent once, as the first file takes its name: the run then ends its work in hand.
    const stopped = await b.run(['restore', '--files', '--to', to], { CIDSYNC_FAILPOINT: 'get:written=SIGINT' })
    expect(stopped.code, stopped.stderr).toBe(130)
    expect(stopped.stderr).toContain('[ERR_INTERRUPTED]')
    const placed = await tree(join(to, 'notes'))
    expect([...placed.keys()].filter(path => path.endsWith('.part')), 'temp files left').toEqual([])
    expect(stopped.stderr).toContain(`stopped by SIGINT: ${placed.size} of 82 files are in place`)
    expect(placed.size).toBeGreaterThan(0)
    expect(placed.size).toBeLessThan(82)
    const want = await tree(a.folder)
    for (const [path, sha] of placed) expect(sha, path).toBe(want.get(path))
    await ok(b, ['restore', '--files', '--to', to])
    expect(await tree(join(to, 'notes'))).toEqual(want)
  }, 180_000)
})
