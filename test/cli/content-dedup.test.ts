import { describe, expect, it } from 'vitest'
import { cp } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, contentObjects, ok, shareKey, tree, writeSomeFiles, type ContentDevice } from './content-devices.js'
import type { LocalService } from './v2-cli.js'

/** The uploads listing's records, by id, with their CID and size. */
async function listing (service: LocalService): Promise<Map<string, { cid: string, size: number }>> {
  const out = new Map<string, { cid: string, size: number }>()
  for await (const r of service.clients.files()) out.set(r.id, { cid: r.cid, size: r.fileSizeInBytes })
  return out
}

/** Content bytes a run of `d` uploaded: new uploads whose CID is an object of a content record. */
async function contentUploaded (service: LocalService, d: ContentDevice, before: Map<string, { cid: string, size: number }>): Promise<{ objects: number, bytes: number }> {
  const objects = contentObjects(d)
  const fresh = [...(await listing(service)).entries()].filter(([id, r]) => !before.has(id) && objects.has(r.cid)).map(([, r]) => r)
  return { objects: fresh.length, bytes: fresh.reduce((sum, r) => sum + r.size, 0) }
}

describe.skipIf(EXTERNAL)('content dedup across two devices sharing the key (processes)', () => {
  it('a second device holding the same files that restored the index uploads 0 content bytes', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    await writeSomeFiles(a.folder, 'same', { largeBytes: 5 * 1024 * 1024 + 7, small: 30 })
    const first = await listing(service)
    await ok(a, ['snapshot'])
    expect((await contentUploaded(service, a, first)).bytes).toBeGreaterThan(5 * 1024 * 1024)
    await cp(a.folder, b.folder, { recursive: true })

    // A new device restores the index first, as the docs say: it knows every record then.
    await ok(b, ['restore'])
    const beforeB = await listing(service)
    const storedB = await ok(b, ['snapshot'])
    expect(await contentUploaded(service, b, beforeB), storedB.stderr).toEqual({ objects: 0, bytes: 0 })
    expect(storedB.stderr).toContain('content: nothing new to store')

    const to = join(root, 'back')
    await ok(a, ['restore', '--files', '--to', to])
    expect(await tree(join(to, 'notes'))).toEqual(await tree(a.folder))
  }, 300_000)

  it('a second device that stores first thing, without a restore, uploads 0 content bytes (failed before: its packs went up again)', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    await writeSomeFiles(a.folder, 'same', { largeBytes: 3 * 1024 * 1024 + 5, small: 30 })
    await ok(a, ['snapshot'])
    await cp(a.folder, b.folder, { recursive: true })

    // No restore, no merge: storing is the first thing b does.
    const beforeB = await listing(service)
    const storedB = await ok(b, ['snapshot'])
    expect(await contentUploaded(service, b, beforeB), storedB.stderr).toEqual({ objects: 0, bytes: 0 })
    expect(storedB.stderr).toContain('content: nothing new to store')
    // Every upload b made is its index's: nothing else is new in the listing.
    const fresh = [...(await listing(service)).entries()].filter(([id]) => !beforeB.has(id)).map(([, r]) => r.cid)
    const objects = contentObjects(a)
    expect(fresh.filter(cid => objects.has(cid))).toEqual([])

    const to = join(root, 'back')
    await ok(b, ['restore', '--files', '--to', to])
    expect(await tree(join(to, 'notes'))).toEqual(await tree(a.folder))
  }, 300_000)
})
