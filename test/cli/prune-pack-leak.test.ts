import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok } from './content-devices.js'

describe.skipIf(EXTERNAL)('small files in packs under retention', () => {
  // The four deletes are found by one catch-up's scan: each is written before the publish.
  it('a pack whose files no kept publish holds is deleted by a prune', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a', '[retention]\nkeep_last = 1\nprune_margin = "0s"\n')
    await writeFile(join(a.folder, 'other.txt'), 'stays')
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T00:30:00.000Z' })
    for (let i = 0; i < 4; i++) await writeFile(join(a.folder, `s${i}.txt`), randomBytes(20_000 + i))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })
    for (let i = 0; i < 4; i++) await rm(join(a.folder, `s${i}.txt`))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })
    await ok(a, ['forget'])
    // The one pack holding the four files only the forgotten publish held.
    const db = new Database(join(a.state, 'index.sqlite'), { readonly: true })
    const packs = new Set((db.prepare('SELECT objects FROM content WHERE size >= 20000').pluck().all() as string[]).map(o => (JSON.parse(o) as Array<[string]>)[0]?.[0]))
    db.close()
    expect(packs.size).toBe(1)
    const pruned = JSON.parse((await ok(a, ['prune', '--json'])).stdout) as { deleted: { content: number } }
    const pack = [...packs][0] as string
    expect({ content: pruned.deleted.content, packHeld: await service.clients.objects.has(pack) }).toEqual({ content: 1, packHeld: false })
  }, 300_000)
})
