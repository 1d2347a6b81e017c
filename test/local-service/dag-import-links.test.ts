import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import * as dagPb from '@ipld/dag-pb'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { sha256 } from 'multiformats/hashes/sha2'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { carOf } from '../helpers/car.js'

/** Links in one node: 40 bytes each, so a node stays under the 2 MiB a block may weigh. */
const LINKS_PER_NODE = 50_000
/** Twice the 250,000 blocks one request may bring: what the service remembers of links is bounded there. */
const MAX_CAR_LINKS = 500_000

/** A dag-pb node of made-up links (to blocks that exist nowhere): what a hostile CAR carries to make the service remember them. */
async function wideNode (): Promise<{ cid: CID, bytes: Uint8Array }> {
  const noise = randomBytes(32 * LINKS_PER_NODE)
  const Links = Array.from({ length: LINKS_PER_NODE }, (_, i) => ({ Hash: CID.createV1(0x55, Digest.create(sha256.code, noise.subarray(32 * i, 32 * (i + 1)))) }))
  const bytes = dagPb.encode(dagPb.prepare({ Links }))
  return { cid: CID.createV1(dagPb.code, await sha256.digest(bytes)), bytes }
}

describe.skipIf(EXTERNAL)('local service: dag/import bounds the links it remembers', () => {
  it('refuses (413) a CAR whose nodes link to more blocks than a request may bring, instead of holding every made-up link in memory', async () => {
    const service = await localServiceUnderTest()
    const nodes = []
    for (let i = 0; i < Math.ceil(MAX_CAR_LINKS / LINKS_PER_NODE) + 1; i++) nodes.push(await wideNode())
    const car = await carOf([(nodes[0] as { cid: CID }).cid], nodes)
    const form = new FormData()
    form.append('file', new Blob([car], { type: 'application/vnd.ipld.car' }), 'wide.car')
    const response = await fetch(`${service.local.url}/api/v0/dag/import`, { method: 'POST', body: form, headers: { authorization: `Bearer ${service.apiKey}` } })
    const text = await response.text()
    expect(response.status, text).toBe(413)
    expect(text).toContain(`link to more than ${MAX_CAR_LINKS} blocks`)
    // Nothing of it kept, and the service answers on.
    expect((await fetch(`${service.local.url}/ipfs/${(nodes[0] as { cid: CID }).cid.toString()}?format=raw`, { method: 'HEAD' })).status).toBe(404)
  }, 120_000)
})
