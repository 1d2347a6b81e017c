import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok } from './content-devices.js'

interface LogJson { versions: Array<{ cid: string, current: boolean, fetchable: boolean, stored: string, pruned?: boolean }> }

describe.skipIf(EXTERNAL)('cidsync log after a prune', () => {
  it('shows an older version whose content a prune removed as not fetchable, "pruned", and never offers it', async () => {
    const root = await useTempDir()
    // One page holds the whole listing: a count of listings is a count of requests.
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a', 'compact_after_deltas = 100\n[retention]\nkeep_last = 1\nprune_margin = "0s"\n')
    await writeFile(join(a.folder, 'doc.bin'), randomBytes(300_000))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
    await writeFile(join(a.folder, 'doc.bin'), randomBytes(300_001))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })
    await writeFile(join(a.folder, 'doc.bin'), randomBytes(300_002))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' })

    const listings = (): number => service.local.requestLog().filter(r => r.route === 'files_uploaded').length
    const listed = listings()
    const before = JSON.parse((await ok(a, ['log', 'notes/doc.bin', '--json'])).stdout) as LogJson
    expect(before.versions.map(v => [v.current, v.fetchable, v.pruned])).toEqual([[true, true, false], [false, true, false], [false, true, false]])
    // The older versions' objects are asked in one pass of the listing (one page here), not one listing each.
    expect(listings() - listed).toBe(1)

    await ok(a, ['forget'])
    await ok(a, ['prune'])
    const after = JSON.parse((await ok(a, ['log', 'notes/doc.bin', '--json'])).stdout) as LogJson
    expect(after.versions.map(v => [v.current, v.fetchable, v.pruned])).toEqual([[true, true, false], [false, false, true], [false, false, true]])
    const table = (await ok(a, ['log', 'notes/doc.bin'])).stdout
    expect(table).toContain('no (pruned)')
    // --cached asks no store: it cannot know, and says nothing of pruning.
    const cached = JSON.parse((await ok(a, ['log', 'notes/doc.bin', '--json', '--cached'])).stdout) as LogJson
    expect(cached.versions.every(v => v.pruned === undefined)).toBe(true)
  }, 240_000)
})
