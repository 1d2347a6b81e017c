import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { contentDevice, ok } from '../../cli/content-devices.js'
import { COMPACT, listed, own, RETENTION, storesNothingAgain } from './index-objects.js'


describe.skipIf(EXTERNAL)('a prune compacts this device\'s content index objects', () => {
  it('writes them again as one (its records read on a thread of their own), deletes the old, and another device still learns every record from it', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', RETENTION)
    for (let i = 0; i < 3; i++) {
      await writeFile(join(a.folder, `f${i}.bin`), randomBytes(10_000 + i))
      await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: `2026-03-01T0${i + 1}:00:00.000Z` })
    }
    const before = await listed(service, 'cidsync-content-index.sealed')
    expect(before.length).toBeGreaterThanOrEqual(3)
    expect(own(a)).toEqual(before)

    await ok(a, ['prune'], { ...COMPACT, CIDSYNC_TEST_INDEX_THREAD_AT: '1' })
    const after = await listed(service, 'cidsync-content-index.sealed')
    expect(after.length).toBe(1)
    expect(before).not.toContain(after[0])
    expect(own(a)).toEqual(after)
    // Below the bound now: a second prune leaves it as it is.
    await ok(a, ['prune'], COMPACT)
    expect(await listed(service, 'cidsync-content-index.sealed')).toEqual(after)

    // Another device with the key, holding the same files, takes a's records from that one object.
    await storesNothingAgain(root, service, a, ['f0.bin', 'f1.bin', 'f2.bin'], '2026-03-01T05:00:00.000Z')
  }, 300_000)

  it('builds on the first pass\'s objects, writes again only what came since, until that reaches a quarter of it', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', RETENTION)
    // 20 records in the first pass's object, then one file a publish.
    for (let i = 0; i < 20; i++) await writeFile(join(a.folder, `base-${i}.bin`), randomBytes(2_000 + i))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
    const [first] = await listed(service, 'cidsync-content-index.sealed')
    const publishOne = async (name: string, hour: number): Promise<void> => {
      await writeFile(join(a.folder, name), randomBytes(3_000 + hour))
      await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: `2026-03-01T${String(hour).padStart(2, '0')}:00:00.000Z` })
    }
    await publishOne('one.bin', 2)
    await ok(a, ['prune'], COMPACT)
    // One object since the first pass's, under the bound: nothing is written again.
    expect(await listed(service, 'cidsync-content-index.sealed')).toHaveLength(2)

    await publishOne('two.bin', 3)
    const since = (await listed(service, 'cidsync-content-index.sealed')).filter(cid => cid !== first)
    expect(since).toHaveLength(2)
    await ok(a, ['prune'], COMPACT)
    // 2 records since it, under a quarter of its 20: the first pass's object stays, the two become one.
    const partial = await listed(service, 'cidsync-content-index.sealed')
    expect(partial).toHaveLength(2)
    expect(partial).toContain(first)
    for (const cid of since) expect(partial).not.toContain(cid)
    expect(own(a)).toEqual(partial)

    // Four more: 6 records since it, past a quarter: everything written again, as one object.
    await publishOne('three.bin', 4)
    await publishOne('four.bin', 5)
    await publishOne('five.bin', 6)
    await publishOne('six.bin', 7)
    await ok(a, ['prune'], COMPACT)
    const again = await listed(service, 'cidsync-content-index.sealed')
    expect(again).toHaveLength(1)
    expect(partial).not.toContain(again[0])

    // Another device with the key learns every record from what is left: it stores nothing again.
    await storesNothingAgain(root, service, a, ['base-0.bin', 'base-19.bin', 'one.bin', 'three.bin', 'six.bin'], '2026-03-01T10:00:00.000Z')
  }, 300_000)
})
