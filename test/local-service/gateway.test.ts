import { describe, expect, it, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import * as dagPb from '@ipld/dag-pb'
import { CID } from 'multiformats/cid'
import { startLocalService, type LocalService } from '../../src/local-service/index.js'
import { createServiceClients } from '../../src/remote/index.js'
import { cidProfile, type CidProfile } from '../../src/content/index.js'
import { newWalletKey } from '../../src/crypto/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { checkBlock, fetchBytes, fromBlocks, unixfsFile, verifiedCar, type ByteAnswer } from '../helpers/trustless.js'

/** 1000-byte leaves, 3 links a node: a 10,000-byte file is a tree three levels deep (DFS and BFS differ). */
const DEEP: CidProfile = { ...cidProfile('kubo-cidv1'), chunkSize: 1000, maxLinks: 3 }

async function serviceWith (files: Record<string, Buffer>): Promise<{ local: LocalService, url: string, cids: Record<string, string> }> {
  const dir = await useTempDir()
  const local = await startLocalService({ dir: join(dir, 'service') })
  onTestFinished(async () => { await local.stop() })
  const url = local.url
  let apiKey: string | undefined
  const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => apiKey, sessionToken: () => undefined })
  onTestFinished(async () => { await clients.close() })
  apiKey = (await clients.deals.login(newWalletKey())).apiKey
  const cids: Record<string, string> = {}
  for (const [name, bytes] of Object.entries(files)) {
    await writeFile(join(dir, name), bytes)
    cids[name] = (await clients.objects.put(join(dir, name), DEEP)).cid
  }
  return { local, url, cids }
}

/** The DAG's CIDs in depth-first pre-order (those among `blocks`), worked out here from the blocks themselves. */
function preorder (root: CID, blocks: ReadonlyArray<{ cid: CID, bytes: Uint8Array }>): string[] {
  const byCid = new Map(blocks.map(b => [b.cid.toString(), b.bytes]))
  const out: string[] = []
  const walk = (cid: CID): void => {
    const bytes = byCid.get(cid.toString())
    if (bytes === undefined) return
    out.push(cid.toString())
    if (cid.code === dagPb.code) for (const link of dagPb.decode(bytes).Links) walk(link.Hash)
  }
  walk(root)
  return out
}

const header = (answer: ByteAnswer, name: string): string | undefined => answer.headers[name] as string | undefined

describe('the local service\'s trustless gateway', () => {
  it('serves a raw block by ?format=raw and by Accept, with the spec\'s headers, and HEAD without the body', async () => {
    const file = randomBytes(10_000)
    const { url, cids } = await serviceWith({ file })
    const cid = CID.parse(cids.file as string)
    const byQuery = await fetchBytes(url, `/ipfs/${cid.toString()}?format=raw`)
    const byAccept = await fetchBytes(url, `/ipfs/${cid.toString()}/`, { headers: { accept: 'application/vnd.ipld.raw' } })
    for (const answer of [byQuery, byAccept]) {
      expect(answer.status).toBe(200)
      await checkBlock(cid, answer.body)
      expect(answer.headers).toMatchObject({
        'content-type': 'application/vnd.ipld.raw',
        'content-length': String(answer.body.byteLength),
        'x-content-type-options': 'nosniff',
        'cache-control': 'public, max-age=29030400, immutable',
        etag: `"${cid.toString()}.raw"`,
        vary: 'Accept',
        'x-ipfs-roots': cid.toString(),
        'content-disposition': `attachment; filename="${cid.toString()}.bin"`
      })
    }
    expect(header(byQuery, 'content-location')).toBeUndefined()
    expect(header(byAccept, 'content-location')).toBe(`/ipfs/${cid.toString()}/?format=raw`)
    const head = await fetchBytes(url, `/ipfs/${cid.toString()}?format=raw`, { method: 'HEAD' })
    expect(head).toMatchObject({ status: 200, body: Buffer.alloc(0) })
    expect(header(head, 'content-length')).toBe(String(byQuery.body.byteLength))
  })

  it('serves the DAG as a CARv1 in depth-first order by ?format=car and by Accept, whose blocks make the file', async () => {
    const file = randomBytes(10_000)
    const { url, cids } = await serviceWith({ file })
    const cid = CID.parse(cids.file as string)
    const byQuery = await fetchBytes(url, `/ipfs/${cid.toString()}?format=car`)
    const byAccept = await fetchBytes(url, `/ipfs/${cid.toString()}`, { headers: { accept: 'application/vnd.ipld.car; version=1; order=dfs' } })
    for (const answer of [byQuery, byAccept]) {
      expect(answer).toMatchObject({ status: 200, complete: true })
      expect(answer.headers).toMatchObject({
        'content-type': 'application/vnd.ipld.car; version=1; order=dfs; dups=n',
        'x-content-type-options': 'nosniff',
        'cache-control': 'public, max-age=29030400, immutable',
        etag: `"${cid.toString()}.car.v1.dfs.dups-n.all"`,
        vary: 'Accept',
        'content-disposition': `attachment; filename="${cid.toString()}.car"`
      })
      const { roots, blocks } = await verifiedCar(answer.body)
      expect(roots.map(r => r.toString())).toEqual([cid.toString()])
      expect(blocks.length).toBe(10 + 4 + 2 + 1) // leaves, two levels of nodes, the root
      expect(blocks.map(b => b.cid.toString())).toEqual(preorder(cid, blocks))
      expect((await unixfsFile(cid, fromBlocks(blocks))).equals(file)).toBe(true)
    }
    expect(byAccept.body.equals(byQuery.body)).toBe(true)
    expect(header(byAccept, 'content-location')).toBe(`/ipfs/${cid.toString()}?format=car`)
    expect(await fetchBytes(url, `/ipfs/${cid.toString()}?format=car`, { method: 'HEAD' })).toMatchObject({ status: 200, body: Buffer.alloc(0) })
  })

  it('lets format win over Accept, the car- parameters over Accept\'s, and q-values choose among Accept\'s types', async () => {
    const { url, cids } = await serviceWith({ file: Buffer.alloc(5_000) })
    const path = `/ipfs/${cids.file as string}`
    const typeOf = async (query: string, accept?: string): Promise<string | undefined> =>
      header(await fetchBytes(url, `${path}${query}`, { headers: accept === undefined ? {} : { accept } }), 'content-type')
    expect(await typeOf('?format=raw', 'application/vnd.ipld.car')).toBe('application/vnd.ipld.raw')
    expect(await typeOf('?format=car', 'application/vnd.ipld.raw')).toMatch(/^application\/vnd\.ipld\.car;/)
    expect(await typeOf('?format=car', 'application/vnd.ipld.car; dups=y')).toContain('dups=y')
    expect(await typeOf('?format=car&car-dups=n', 'application/vnd.ipld.car; dups=y')).toContain('dups=n')
    expect(await typeOf('', 'application/vnd.ipld.raw;q=0.5, application/vnd.ipld.car;q=0.9')).toMatch(/^application\/vnd\.ipld\.car;/)
    expect(await typeOf('', 'application/vnd.ipld.car;q=0.5, application/vnd.ipld.raw')).toBe('application/vnd.ipld.raw')
    // The spec's example: a CAR variant not served, then one that is, at a lower q.
    expect(await typeOf('', 'application/vnd.ipld.car;order=foo, application/vnd.ipld.car;order=dfs;dups=y;q=0.5')).toBe('application/vnd.ipld.car; version=1; order=dfs; dups=y')
    expect(await typeOf('', 'application/vnd.ipld.car; order=unk')).toBe('application/vnd.ipld.car; version=1; order=dfs; dups=n')
    expect(await typeOf('', '*/*;q=0.1, application/vnd.ipld.raw')).toBe('application/vnd.ipld.raw')
    expect(await typeOf('', 'application/vnd.ipld.raw;q=0, */*')).toBe('application/octet-stream')
  })

  it('serves the file as before without a trustless type, refuses with 406 an Accept of only types it does not serve, and with 400 bad parameters', async () => {
    const file = randomBytes(3_000)
    const { url, cids } = await serviceWith({ file })
    const path = `/ipfs/${cids.file as string}`
    for (const accept of [undefined, '*/*', 'text/html,application/xhtml+xml,*/*;q=0.8', 'application/octet-stream', 'application/json', 'text/plain']) {
      const answer = await fetchBytes(url, path, { headers: accept === undefined ? {} : { accept } })
      expect(answer).toMatchObject({ status: 200, headers: { 'content-type': 'application/octet-stream', 'content-length': '3000', etag: `"${cids.file as string}"` } })
      expect(answer.body.equals(file)).toBe(true)
    }
    for (const accept of ['application/vnd.ipld.dag-json', 'application/vnd.ipld.car; version=2', 'application/vnd.ipld.car; dups=maybe', 'application/x-tar', 'application/vnd.ipfs.ipns-record']) {
      const answer = await fetchBytes(url, path, { headers: { accept } })
      expect(answer.status, accept).toBe(406)
      expect(answer.body.toString()).toContain('application/vnd.ipld.raw')
    }
    for (const query of ['?format=tar', '?format=car&dag-scope=most', '?format=car&entity-bytes=abc', '?format=car&entity-bytes=10:5', '?format=car&car-version=2', '?format=car&car-order=bfs', '?format=car&car-dups=x', '?format=car&entity-bytes=20000:*']) {
      expect((await fetchBytes(url, `${path}${query}`)).status, query).toBe(400)
    }
  })

  it('sends a repeated block each time it is met with dups=y, once with dups=n', async () => {
    const { url, cids } = await serviceWith({ zeros: Buffer.alloc(10_000) })
    const cid = CID.parse(cids.zeros as string)
    const once = await verifiedCar((await fetchBytes(url, `/ipfs/${cid.toString()}?format=car`)).body)
    const every = await fetchBytes(url, `/ipfs/${cid.toString()}?format=car&car-dups=y`)
    expect(header(every, 'etag')).toBe(`"${cid.toString()}.car.v1.dfs.dups-y.all"`)
    const all = await verifiedCar(every.body)
    expect(all.blocks.length).toBe(17)
    expect(new Set(once.blocks.map(b => b.cid.toString())).size).toBe(once.blocks.length)
    expect(once.blocks.map(b => b.cid.toString())).toEqual([...new Set(all.blocks.map(b => b.cid.toString()))])
    expect((await unixfsFile(cid, fromBlocks(once.blocks))).equals(Buffer.alloc(10_000))).toBe(true)
  })

  it('carries the root alone for dag-scope=block, the whole file for entity, and the blocks of a range for entity-bytes', async () => {
    const file = randomBytes(10_000)
    const { url, cids } = await serviceWith({ file })
    const cid = CID.parse(cids.file as string)
    const car = async (query: string): Promise<Awaited<ReturnType<typeof verifiedCar>>> => {
      const answer = await fetchBytes(url, `/ipfs/${cid.toString()}?format=car&${query}`)
      expect(answer.status, query).toBe(200)
      return await verifiedCar(answer.body)
    }
    const leaves = (blocks: ReadonlyArray<{ cid: CID }>): number => blocks.filter(b => b.cid.code === 0x55).length
    expect((await car('dag-scope=block')).blocks.map(b => b.cid.toString())).toEqual([cid.toString()])
    expect((await car('dag-scope=entity')).blocks.length).toBe(17)
    const range = await car('entity-bytes=2500:4499')
    expect(leaves(range.blocks)).toBe(3)
    expect(range.blocks.map(b => b.cid.toString())).toEqual(preorder(cid, range.blocks))
    expect((await unixfsFile(cid, fromBlocks(range.blocks), { offset: 2500, length: 2000 })).equals(file.subarray(2500, 4500))).toBe(true)
    const tail = await car('entity-bytes=-1000:*')
    expect(leaves(tail.blocks)).toBe(1)
    expect((await unixfsFile(cid, fromBlocks(tail.blocks), { offset: 9000, length: 1000 })).equals(file.subarray(9000))).toBe(true)
    expect((await car('entity-bytes=9500:20000')).blocks.length).toBe(4) // root, its second child, one node, one leaf
    expect((await car('entity-bytes=0:*')).blocks.length).toBe(17)
    const etag = header(await fetchBytes(url, `/ipfs/${cid.toString()}?format=car&entity-bytes=0:99`), 'etag')
    expect(etag).toBe(`"${cid.toString()}.car.v1.dfs.dups-n.entity.bytes-0:99"`)
  })

  it('answers 404 for a CID it does not hold, 400 for a malformed one, 412 when only a cached one will do, 304 for a matching If-None-Match', async () => {
    const { url, cids } = await serviceWith({ file: randomBytes(2_000) })
    const absent = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'
    for (const query of ['', '?format=raw', '?format=car']) {
      expect((await fetchBytes(url, `/ipfs/${absent}${query}`)).status).toBe(404)
      expect((await fetchBytes(url, `/ipfs/${absent}${query}`, { method: 'HEAD' })).status).toBe(404)
      expect((await fetchBytes(url, `/ipfs/not-a-cid${query}`)).status).toBe(400)
    }
    expect((await fetchBytes(url, `/ipfs/${absent}?format=raw`, { headers: { 'cache-control': 'only-if-cached' } })).status).toBe(412)
    const cid = cids.file as string
    for (const [query, etag] of [['?format=raw', `"${cid}.raw"`], ['?format=car', `"${cid}.car.v1.dfs.dups-n.all"`], ['', `"${cid}"`]] as const) {
      const answer = await fetchBytes(url, `/ipfs/${cid}${query}`, { headers: { 'if-none-match': `W/"other", ${etag}` } })
      expect(answer).toMatchObject({ status: 304, body: Buffer.alloc(0), headers: { etag } })
    }
  })

  it('answers the trustless gateway probe: bafkqaaa, the empty identity CID', async () => {
    const { url } = await serviceWith({})
    const raw = await fetchBytes(url, '/ipfs/bafkqaaa?format=raw')
    expect(raw).toMatchObject({ status: 200, body: Buffer.alloc(0), headers: { 'content-length': '0' } })
    const car = await fetchBytes(url, '/ipfs/bafkqaaa', { headers: { accept: 'application/vnd.ipld.car' } })
    expect(car.status).toBe(200)
    const { roots, blocks } = await verifiedCar(car.body)
    expect(roots.map(r => r.toString())).toEqual(['bafkqaaa'])
    expect(blocks).toEqual([]) // identity blocks are never sent: their bytes are in the CID
    expect((await fetchBytes(url, '/ipfs/bafkqaaa?format=raw', { method: 'HEAD' })).status).toBe(200)
  })

  it('still lets a fault flip a bit of a raw block or cut a CAR short', async () => {
    const { local, url, cids } = await serviceWith({ file: randomBytes(10_000) })
    const cid = CID.parse(cids.file as string)
    local.faults.set('gateway', { bitflip: true, times: 1 })
    const flipped = await fetchBytes(url, `/ipfs/${cid.toString()}?format=raw`)
    await expect(checkBlock(cid, flipped.body)).rejects.toThrow(/does not hash/)
    local.faults.set('gateway', { truncate: true, times: 1 })
    const cut = await fetchBytes(url, `/ipfs/${cid.toString()}?format=car`)
    expect(cut.status).toBe(200)
    const read = await verifiedCar(cut.body).then(car => car.blocks.length, () => 0)
    expect(read).toBeLessThan(17)
  })
})
