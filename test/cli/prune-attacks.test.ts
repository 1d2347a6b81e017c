import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, contentObjects, ok, shareKey, storedThenDeleted } from './content-devices.js'

const RETENTION = '[retention]\nkeep_last = 1\nprune_margin = "0s"\n'

describe.skipIf(EXTERNAL)('prune: what a later publish names again', () => {
  it('a file deleted, pruned, then added again with the same bytes comes back', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', 'compact_after_deltas = 1\n' + RETENTION)
    const bytes = randomBytes(3 * 1024 * 1024 + 3)
    let first = new Set<string>()
    await storedThenDeleted(a, bytes, async () => { first = contentObjects(a) })
    await ok(a, ['forget'])
    await ok(a, ['prune'])
    const gone = await Promise.all([...first].map(async o => await service.clients.objects.has(o)))
    expect(gone.some(has => !has)).toBe(true)
    // As a service that deletes at once does: the bytes go with the listing's rows.
    await service.local.reclaim()

    // The same bytes again, under another name: the publish must store them again.
    await writeFile(join(a.folder, 'again.bin'), bytes)
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' })
    // Gone from the folder too: only the service can bring it back.
    await rm(join(a.folder, 'again.bin'))
    await ok(a, ['get', 'notes/again.bin', '--to', join(root, 'back')])
    expect((await readFile(join(root, 'back', 'notes', 'again.bin'))).equals(bytes)).toBe(true)
    expect((await ok(a, ['verify', '--full', '--content'])).stdout).toContain('restorable')
  }, 600_000)

  it('another device that names a pruned file\'s content again stores it again', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', 'compact_after_deltas = 1\n' + RETENTION)
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    const bytes = randomBytes(3 * 1024 * 1024 + 1)
    // b takes in a's first publish: its index now holds a's record of doc.bin.
    await storedThenDeleted(a, bytes, async () => await ok(b, ['restore']))
    await ok(a, ['forget'])
    await ok(a, ['prune'])
    await service.local.reclaim()

    await writeFile(join(b.folder, 'copy.bin'), bytes)
    await ok(b, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' })
    await rm(join(b.folder, 'copy.bin'))
    await ok(b, ['get', 'notes/copy.bin', '--to', join(root, 'back')])
    expect((await readFile(join(root, 'back', 'notes', 'copy.bin'))).equals(bytes)).toBe(true)
  }, 600_000)
})
