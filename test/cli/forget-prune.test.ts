import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok } from './content-devices.js'
import { history } from './retention-devices.js'

const RETENTION = 'compact_after_deltas = 1\n[retention]\nkeep_last = 1\nprune_margin = "0s"\n'

describe.skipIf(EXTERNAL)('cidsync forget --prune whose prune fails', () => {
  it('says what the forget did before it fails, in JSON as in its lines', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', RETENTION)
    for (const [i, hour] of ['01', '02', '03', '04'].entries()) {
      await writeFile(join(a.folder, 'doc.txt'), `version ${i}`)
      await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: `2026-03-01T${hour}:00:00.000Z` })
    }
    // Lines: the forget's come first, then the prune fails.
    const text = await a.run(['forget', '--prune'], { CIDSYNC_FAILPOINT: 'prune:read=ENOSPC' })
    expect(text.code).not.toBe(0)
    expect(text.stdout).toContain('forgot 3 publishes')
    expect(text.stdout).toContain('the pointer moved to')
    expect(await history(a)).toHaveLength(1)

    await writeFile(join(a.folder, 'doc.txt'), 'version 5')
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T05:00:00.000Z' })
    const json = await a.run(['forget', '--prune', '--json'], { CIDSYNC_FAILPOINT: 'prune:read=ENOSPC' })
    expect(json.code).not.toBe(0)
    // The pointer moved and a publish was forgotten...
    expect(await history(a)).toHaveLength(1)
    // ...and --json says so, with no prune's object: its error is on stderr.
    const printed = JSON.parse(json.stdout) as { forgotten: number, prune: unknown }
    expect(printed).toMatchObject({ forgotten: 1, prune: null })
    expect(json.stderr).toContain('ENOSPC')
  }, 300_000)
})
