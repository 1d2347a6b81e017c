import { describe, expect, it, onTestFinished } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startEmbedded } from '../../src/connect/embedded.js'
import { cidProfile } from '../../src/content/index.js'
import type { LocalService } from '../../src/local-service/index.js'
import type { StoredUpload } from '../../src/store/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const PROFILE = cidProfile('kubo-cidv1')

async function embedded (admin: boolean): Promise<{ put: (name: string, text: string) => Promise<string>, store: Awaited<ReturnType<typeof startEmbedded>>['clients']['objects'], asked: (route: string) => number }> {
  const root = await useTempDir()
  const service = await startEmbedded(join(root, 'service'), { admin })
  onTestFinished(async () => { await service.clients.close(); await service.service.stop() })
  const store = service.clients.objects
  return {
    store,
    put: async (name, text) => {
      await writeFile(join(root, name), text)
      return (await store.put(join(root, name), PROFILE)).cid
    },
    // The service runs on this thread here: its log of requests says what went over HTTP.
    asked: (route) => (service.service as LocalService).requestLog().filter(r => r.route === route).length
  }
}

describe('the embedded service\'s uploads, listed and deleted in this process', () => {
  it('lists newest first, deletes a batch without a request, and keeps what was uploaded again since the walk', async () => {
    const { put, store, asked } = await embedded(false)
    const a = await put('a.txt', 'a')
    const b = await put('b.txt', 'b')
    const c = await put('c.txt', 'c')
    const walked = new Map<string, StoredUpload[]>()
    const listed: string[] = []
    for await (const object of store.list({ onUpload: (cid, upload) => { walked.set(cid, [...(walked.get(cid) ?? []), upload]) } })) listed.push(object.cid)
    expect(listed).toEqual([c, b, a])
    expect(walked.get(a)?.[0]?.storedAt).toBeGreaterThan(0)
    // `a` uploaded again after the walk: the device that did relies on it.
    await put('a-again.txt', 'a')
    // stat answers the newest upload, as a walk of the listing meets it first.
    expect((await store.stat(a))?.name).toBe('a-again.txt')
    const done = await store.deleteMany([a, b, c], { seen: { uploads: walked, newestAt: walked.get(c)?.[0]?.storedAt } })
    expect(new Set(done.removed)).toEqual(new Set([b, c]))
    expect(done.refused).toEqual([])
    expect(await store.has(a)).toBe(true)
    expect(await store.stat(b)).toBeUndefined()
    // Deleted by name, every upload of it goes; a second delete answers false.
    expect(await store.delete(a)).toBe(true)
    expect(await store.delete(a)).toBe(false)
    expect(asked('files_uploaded') + asked('delete_file')).toBe(0)
  })

  it('with the admin routes on, where faults may be set, goes through the routes', async () => {
    const { put, store, asked } = await embedded(true)
    const a = await put('a.txt', 'a')
    expect((await store.deleteMany([a])).removed).toEqual([a])
    expect(asked('delete_file')).toBe(1)
    expect(asked('files_uploaded')).toBeGreaterThan(0)
  })
})
