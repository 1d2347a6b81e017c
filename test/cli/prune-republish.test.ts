import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, contentObjects, ok, storedThenDeleted } from './content-devices.js'

const RETENTION = 'compact_after_deltas = 1\n[retention]\nkeep_last = 1\nprune_margin = "0s"\n'

describe.skipIf(EXTERNAL)('a publish under way while a prune deletes what it names', () => {
  it('a publish killed before its pointer move, resumed after a prune took its content, still names only what is there', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', RETENTION)
    const bytes = randomBytes(3 * 1024 * 1024 + 5)
    let first = new Set<string>()
    await storedThenDeleted(a, bytes, async () => { first = contentObjects(a) })
    await ok(a, ['forget'])

    // The same bytes again: the stored record is taken (its objects are still listed), and the
    // publish naming it is killed once uploaded, before its pointer move.
    await writeFile(join(a.folder, 'again.bin'), bytes)
    const killed = await a.run(['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z', CIDSYNC_FAILPOINT: 'publish:pointer' })
    expect(killed.signal, killed.stderr).toBe('SIGKILL')
    // The prune reads only the pointer's chain: to it those objects hold a forgotten file alone.
    await ok(a, ['prune'])
    const gone = (await Promise.all([...first].map(async o => await service.clients.objects.has(o) ? undefined : o))).filter(o => o !== undefined)
    expect(gone.length).toBeGreaterThan(0)

    // The publish resumes. Its storing pass finds the record's objects gone and stores the file
    // again (the same objects come back), so what the pointer then names is all there.
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T04:00:00.000Z' })
    await rm(join(a.folder, 'again.bin'))
    await ok(a, ['get', 'notes/again.bin', '--to', join(root, 'back')])
    expect((await readFile(join(root, 'back', 'notes', 'again.bin'))).equals(bytes)).toBe(true)
    const verified = await a.run(['verify', '--full', '--content'])
    expect(verified.code, verified.stdout + verified.stderr).toBe(0)
  }, 600_000)

  it('the first publish after a prune says nothing is stored again for files deleted before it', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', RETENTION)
    // Five files published, deleted, and their publish forgotten: the prune's list names their objects.
    await writeFile(join(a.folder, 'stays.txt'), 'stays')
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T00:30:00.000Z' })
    // A pack of their own: one file kept in it would keep it.
    for (let i = 0; i < 5; i++) await writeFile(join(a.folder, `b${i}.bin`), randomBytes(30_000 + i))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
    for (let i = 0; i < 5; i++) await rm(join(a.folder, `b${i}.bin`))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })
    await ok(a, ['forget'])
    const pruned = JSON.parse((await ok(a, ['prune', '--json'])).stdout) as { deleted: { content: number } }
    expect(pruned.deleted.content).toBeGreaterThan(0)

    // The next publish reads that list. Its dropped records are of files gone: nothing to store again.
    await writeFile(join(a.folder, 'c.txt'), 'new')
    const next = await a.run(['snapshot', '--json'], { CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' })
    expect(next.code, next.stderr).toBe(0)
    expect(next.stderr).not.toContain('stored again')
    const published = JSON.parse(next.stdout) as { storedAgain?: number, content: { storedFiles: number } }
    expect({ again: published.storedAgain, stored: published.content.storedFiles }).toEqual({ again: undefined, stored: 1 })
  }, 600_000)
})
