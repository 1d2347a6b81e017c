import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { cidProfile } from '../../src/content/index.js'
import { RemoteBadRequestError, RemoteUnauthorizedError } from '../../src/errors.js'
import type { ObjectStore } from '../../src/store/index.js'
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
