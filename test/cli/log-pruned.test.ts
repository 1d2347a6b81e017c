import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { indexPath, openIndex } from '../../src/index/index.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok } from './content-devices.js'

interface LogJson { publishesKept: number, forgottenVersions: number, versions: Array<{ cid: string, size: number, current: boolean, fetchable: boolean, stored: string, pruned?: boolean }> }

describe.skipIf(EXTERNAL)('cidsync log after a forget and a prune', () => {
  it('hides versions only forgotten publishes held, and counts them; shows a kept version whose content is gone as "pruned", never offered', async () => {
    const root = await useTempDir()
    // One page holds the whole listing: a count of listings is a count of requests.
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a', 'compact_after_deltas = 100\n[retention]\nkeep_last = 2\nprune_margin = "0s"\n')
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
    expect(before.forgottenVersions).toBe(0)
    // The older versions' objects are asked in one pass of the listing (one page here), not one listing each.
    expect(listings() - listed).toBe(1)

    // keep_last = 2: the first version was held only by the publish forgotten.
    await ok(a, ['forget'])
    await ok(a, ['prune'])
    const after = JSON.parse((await ok(a, ['log', 'notes/doc.bin', '--json'])).stdout) as LogJson
    expect(after.versions.map(v => [v.current, v.fetchable, v.pruned])).toEqual([[true, true, false], [false, true, false]])
    expect(after.versions.map(v => v.size)).toEqual([300_002, 300_001])
    expect(after.forgottenVersions).toBe(1)
    expect(after.publishesKept).toBe(2)
    expect((await ok(a, ['log', 'notes/doc.bin'])).stdout).toContain('2 versions of notes/doc.bin, from the index and 2 publishes of history kept; 1 older version only forgotten publishes held is not shown')
    // --cached answers from the chain last walked: the same two.
    const cached = JSON.parse((await ok(a, ['log', 'notes/doc.bin', '--json', '--cached'])).stdout) as LogJson
    expect(cached.versions.map(v => v.size)).toEqual([300_002, 300_001])
    expect(cached.versions.every(v => v.pruned === undefined)).toBe(true)

    // A store that lost the kept older version's content (as a prune that went wrong would leave it).
    const index = openIndex(indexPath(a.state), { readonly: true })
    const objects = index.content.lookup(after.versions[1]?.cid as string).flatMap(r => (JSON.parse(r.objects) as Array<[string, number, number]>).map(o => o[0]))
    index.close()
    expect(objects.length).toBeGreaterThan(0)
    await service.clients.objects.deleteMany(objects)
    const lost = JSON.parse((await ok(a, ['log', 'notes/doc.bin', '--json'])).stdout) as LogJson
    expect(lost.versions.map(v => [v.current, v.fetchable, v.pruned])).toEqual([[true, true, false], [false, false, true]])
    expect((await ok(a, ['log', 'notes/doc.bin'])).stdout).toContain('no (pruned)')
  }, 240_000)
})
