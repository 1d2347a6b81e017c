import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { cidProfile } from '../../src/content/index.js'
import { localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { fetchBytes } from '../helpers/trustless.js'

describe('the gateway under /ipns/', () => {
  it('answers with Last-Modified (when the name was bound) and a TTL Cache-Control, never immutable', async () => {
    const service = await localServiceUnderTest()
    const dir = await useTempDir()
    await writeFile(join(dir, 'one.txt'), 'first')
    const cid = (await service.clients.objects.put(join(dir, 'one.txt'), cidProfile('kubo-cidv1'))).cid
    const key = await service.clients.names.create()
    const before = Date.now()
    await service.clients.names.publish(key.ipnsName, cid)
    const after = Date.now()
    for (const method of ['GET', 'HEAD']) {
      const answer = await fetchBytes(service.local.url, `/ipns/${key.ipnsId}`, { method })
      expect(answer.status, method).toBe(200)
      expect(answer.headers['cache-control'], method).toBe('public, max-age=60')
      const modified = Date.parse(answer.headers['last-modified'] as string)
      // HTTP dates have whole seconds.
      expect(modified).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000)
      expect(modified).toBeLessThanOrEqual(after)
    }
    expect((await fetchBytes(service.local.url, `/ipns/${key.ipnsId}`)).body.toString()).toBe('first')
    // /ipfs/ answers stay immutable, with no Last-Modified.
    const immutable = await fetchBytes(service.local.url, `/ipfs/${cid}`)
    expect(immutable.headers['cache-control']).toBe('public, max-age=29030400, immutable')
    expect(immutable.headers['last-modified']).toBeUndefined()
  })
})
