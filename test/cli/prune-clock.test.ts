import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey } from './content-devices.js'

const DAY = 86_400_000

/** Every upload listed so far, as if made `ms` earlier. */
function backdate (dir: string, ms: number): void {
  const db = new Database(join(dir, 'service.sqlite'))
  try { db.prepare('UPDATE files SET created_at = created_at - ?').run(ms) } finally { db.close() }
}

describe.skipIf(EXTERNAL)('prune: a forget made on a device whose clock runs behind', () => {
  it('still holds the chain it replaced for prune_margin, by the service\'s clock', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', 'compact_after_deltas = 1\n[retention]\nkeep_last = 1\nprune_margin = "1d"\n')
    const b = await contentDevice(root, service, 'b', 'compact_after_deltas = 1\n[retention]\nkeep_last = 1\nprune_margin = "1d"\n')
    await shareKey(a, b)
    await writeFile(join(a.folder, 'doc.bin'), randomBytes(1024 * 1024 + 3))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
    await rm(join(a.folder, 'doc.bin'))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })
    // The history is older than the margin, as any a forget thins is.
    backdate(join(root, 'service'), 3 * DAY)
    // a's clock is two days behind: the forget dates the chain it replaced two days ago.
    await ok(a, ['forget'], { CIDSYNC_TEST_CLOCK: new Date(Date.now() - 2 * DAY).toISOString() })
    // b, its clock right, prunes at once: a restore that read the old pointer may still be reading that chain.
    const pruned = JSON.parse((await ok(b, ['prune', '--json'])).stdout) as { chainsHeld: number, deleted: Record<string, number> }
    expect(pruned).toMatchObject({ chainsHeld: 1, deleted: { manifest: 0, segment: 0 } })
  }, 300_000)
})
