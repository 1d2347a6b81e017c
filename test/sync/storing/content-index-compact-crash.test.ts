import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { copyFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { contentDevice, ok, shareKey } from '../../cli/content-devices.js'
import { COMPACT, listed, own, RETENTION } from './index-objects.js'

describe.skipIf(EXTERNAL)('a prune compacting content index objects, killed', () => {
  it('killed after a new object, full or since the last full one, a rerun finishes and no record is lost', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', RETENTION)
    const names: string[] = []
    const publish = async (hour: number, files: number): Promise<void> => {
      for (let i = 0; i < files; i++) {
        names.push(`h${hour}-${i}.bin`)
        await writeFile(join(a.folder, `h${hour}-${i}.bin`), randomBytes(2_000 + hour * 10 + i))
      }
      await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: `2026-03-01T${String(hour).padStart(2, '0')}:00:00.000Z` })
    }
    await publish(1, 20)
    await publish(2, 1)
    // Killed in the first, full compaction: no base is noted; the rerun writes everything again.
    const killed = await a.run(['prune'], { ...COMPACT, CIDSYNC_FAILPOINT: 'prune:index-compacted' })
    expect(killed.signal).toBe('SIGKILL')
    await ok(a, ['prune'], COMPACT)
    const [full] = await listed(service, 'cidsync-content-index.sealed')
    expect(own(a)).toEqual([full])
    // Killed in a compaction of what came since: the base stays, the rerun replaces the rest.
    await publish(3, 1)
    await publish(4, 1)
    const again = await a.run(['prune'], { ...COMPACT, CIDSYNC_FAILPOINT: 'prune:index-compacted' })
    expect(again.signal).toBe('SIGKILL')
    await ok(a, ['prune'], COMPACT)
    const after = await listed(service, 'cidsync-content-index.sealed')
    expect(after).toContain(full)
    expect(after.length).toBeLessThanOrEqual(3)
    expect(own(a)).toEqual(after)

    // Another device with the key holding every file stores none of them again.
    const b = await contentDevice(root, service, 'b', RETENTION)
    await shareKey(a, b)
    for (const name of names) await copyFile(join(a.folder, name), join(b.folder, name))
    const packs = await listed(service, 'cidsync-pack.sealed')
    await ok(b, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T10:00:00.000Z' })
    expect(await listed(service, 'cidsync-pack.sealed')).toEqual(packs)
  }, 300_000)
})
