import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { cidProfile } from '../../src/content/index.js'
import { RemoteBadRequestError, RemoteUnauthorizedError } from '../../src/errors.js'
import type { ObjectStore, StoredUpload } from '../../src/store/index.js'
import { serviceUnderTest, EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { objectStoreConformance } from '../store/conformance.js'
import { pointerRegistryConformance } from '../store/pointer-conformance.js'

const PROFILE = cidProfile('kubo-cidv1')

if (!EXTERNAL) {
  pointerRegistryConformance('the service over HTTP', async () => ({ pointers: (await serviceUnderTest()).clients.pointers }))
  objectStoreConformance('the service over HTTP', async () => {
    const { clients, local } = await serviceUnderTest()
    return {
      store: clients.objects,
      // A service that keeps a deleted upload's bytes until it reclaims space.
      deleteKeepsBytes: true,
      // Its gateway answers other bytes than the CID's.
      damage: async () => { local?.faults.set('gateway', { bitflip: true }) }
    }
  })
}

async function stored (store: ObjectStore, sizes: readonly number[]): Promise<string[]> {
  const dir = await useTempDir()
  const cids: string[] = []
  for (const [i, size] of sizes.entries()) {
    const path = join(dir, `${i}.bin`)
    await writeFile(path, randomBytes(size))
    cids.push((await store.put(path, PROFILE)).cid)
  }
  return cids
}

async function listed (store: ObjectStore): Promise<Set<string>> {
  const cids = new Set<string>()
  for await (const o of store.list()) cids.add(o.cid)
  return cids
}

describe.skipIf(EXTERNAL)('the service over HTTP: a delete the service refuses', () => {
  it('deleteMany answers a 4xx for one upload as refused, with the reason, and deletes the rest', async () => {
    const { clients, local } = await serviceUnderTest()
    const cids = await stored(clients.objects, [500, 600, 700])
    // The first delete only, as production refuses an upload under a permanent plan.
    local?.faults.set('delete_file', { errorRate: 1, status: 400, times: 1 })
    const answer = await clients.objects.deleteMany(cids)
    expect(answer.refused).toHaveLength(1)
    expect(answer.refused[0]?.reason).toMatch(/^answered 400: injected fault$/)
    const refused = answer.refused[0]?.cid as string
    expect([...answer.removed, refused].sort()).toEqual([...cids].sort())
    expect([...await listed(clients.objects)]).toEqual([refused])
  })

  it('deleteMany still throws a refused credential, and delete throws a refusal', async () => {
    const { clients, local } = await serviceUnderTest()
    const cids = await stored(clients.objects, [500, 600])
    local?.faults.set('delete_file', { errorRate: 1, status: 403, times: 1 })
    await expect(clients.objects.deleteMany(cids)).rejects.toBeInstanceOf(RemoteUnauthorizedError)
    local?.faults.set('delete_file', { errorRate: 1, status: 400, times: 1 })
    await expect(clients.objects.delete(cids[1] as string)).rejects.toBeInstanceOf(RemoteBadRequestError)
    expect((await listed(clients.objects)).has(cids[1] as string)).toBe(true)
  })
})

describe.skipIf(EXTERNAL)('the service over HTTP: a delete given what a walk of the listing read', () => {
  it('deletes only the uploads the walk read, reads only the listing\'s head, and an upload made since stays', async () => {
    const { clients, local } = await serviceUnderTest()
    const store = clients.objects
    const dir = await useTempDir()
    const bytes = join(dir, 'again.bin')
    await writeFile(bytes, randomBytes(800))
    const again = (await store.put(bytes, PROFILE)).cid
    const [old] = await stored(store, [700, 500, 600, 900, 1000, 1100, 1200])
    const uploads = new Map<string, StoredUpload[]>()
    let newestAt = 0
    for await (const _ of store.list({ onUpload: (cid, upload) => { uploads.set(cid, [...uploads.get(cid) ?? [], upload]); newestAt = Math.max(newestAt, upload.storedAt ?? 0) } })) { /* walked */ }
    // A file's time comes from a coarser clock than Date.now(): the next put is well after the walk.
    const walkedAt = Date.now()
    while (Date.now() <= walkedAt + 50) await new Promise(resolve => setTimeout(resolve, 5))
    // Another device stores the same bytes again, after the walk: a new upload, under a new id.
    await store.put(bytes, PROFILE)
    const pages = (): number => (local?.requestLog() ?? []).filter(r => r.method === 'GET' && r.path === '/api/user/files_uploaded').length
    const before = pages()
    // Even with a time past the new upload: only the uploads the walk read may go.
    const answer = await store.deleteMany([old as string, again], { storedBefore: Date.now() + 1, seen: { uploads, newestAt } })
    expect(answer).toEqual({ removed: [old], refused: [] })
    expect(pages() - before).toBe(1)
    expect(await store.has(old as string)).toBe(false)
    expect(await store.has(again)).toBe(true)
    // Without a walk's uploads, it reads the listing whole and takes every upload, the new one too.
    expect(await store.deleteMany([again], { storedBefore: Date.now() + 1 })).toEqual({ removed: [again], refused: [] })
    expect(pages() - before).toBeGreaterThan(3)
  })
})
