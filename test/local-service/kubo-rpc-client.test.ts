import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { importer } from 'ipfs-unixfs-importer'
import { fixedSize } from 'ipfs-unixfs-importer/chunker'
import { balanced } from 'ipfs-unixfs-importer/layout'
import { create, type KuboRPCClient } from 'kubo-rpc-client'
import type { CID } from 'multiformats/cid'
import { CID_PROFILES, CidBuilder } from '../../src/content/index.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { carOf } from '../helpers/car.js'

const encoder = new TextEncoder()

/** The real Kubo RPC client, pointed at a local service on loopback with an account's API key. */
async function kubo (): Promise<{ client: KuboRPCClient, listed: () => Promise<string[]> }> {
  const service = await localServiceUnderTest()
  const client = create({ url: service.local.url, headers: { authorization: `Bearer ${service.apiKey}` } })
  const listed = async (): Promise<string[]> => {
    const cids: string[] = []
    for await (const record of service.clients.files()) cids.push(record.cid)
    return cids
  }
  return { client, listed }
}

async function all<T> (source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const item of source) out.push(item)
  return out
}

async function catBytes (client: KuboRPCClient, path: string, options: { offset?: number, length?: number } = {}): Promise<Buffer> {
  return Buffer.concat(await all(client.cat(path, options)))
}

/** The CIDs ipfs-unixfs-importer (not cidsync's code) gives these files and directories under Kubo's `--cid-version=1`. */
async function importerCids (files: Array<{ path: string, content?: Uint8Array }>): Promise<Map<string, string>> {
  const blockstore = { put: async () => {}, get: async () => { throw new Error('unused') } }
  const cids = new Map<string, string>()
  for await (const entry of importer(files.map(f => ({ path: f.path, content: f.content })), blockstore as never, {
    cidVersion: 1,
    rawLeaves: true,
    chunker: fixedSize({ chunkSize: 262_144 }),
    layout: balanced({ maxChildrenPerNode: 174 }),
    reduceSingleLeafToSelf: true,
    wrapWithDirectory: false
  })) cids.set(entry.path ?? '', entry.cid.toString())
  return cids
}

/** A file's blocks under Kubo's CIDv1 profile, leaves first, root last. */
function fileBlocks (bytes: Uint8Array): { root: CID, blocks: Array<{ cid: CID, bytes: Uint8Array }> } {
  const blocks: Array<{ cid: CID, bytes: Uint8Array }> = []
  const builder = new CidBuilder(CID_PROFILES['kubo-cidv1'], { onBlock: (cid, block) => { blocks.push({ cid, bytes: Uint8Array.from(block) }) } })
  const root = builder.update(bytes).finish()
  return { root, blocks }
}

describe.skipIf(EXTERNAL)('kubo-rpc-client against the local service', () => {
  it('adds one file with Kubo\'s defaults, and cats its bytes back', async () => {
    const { client, listed } = await kubo()
    const added = await client.add({ path: 'hello.txt', content: encoder.encode('hello world') })
    // `ipfs add` of "hello world": the CID Kubo gives it.
    expect(added.cid.toString()).toBe('Qmf412jQZiuVUtdgnB36FXFX7xg5V6KEbSJ4dpQuhkLyfD')
    expect(added.path).toBe('hello.txt')
    expect((await catBytes(client, added.cid.toString())).toString()).toBe('hello world')
    expect((await catBytes(client, `/ipfs/${added.cid.toString()}`, { offset: 6, length: 3 })).toString()).toBe('wor')
    expect(await listed()).toEqual([added.cid.toString()])
  })

  it('adds several files and a directory in one request, a line a file and a directory, as Kubo answers', async () => {
    const { client, listed } = await kubo()
    const big = randomBytes(600 * 1024)
    const files = [
      { path: 'dir/a é.txt', content: encoder.encode('first') },
      { path: 'dir/sub' },
      { path: 'dir/sub/big.bin', content: big },
      { path: 'c.txt', content: encoder.encode('third') }
    ]
    const added = await all(client.addAll(files, { cidVersion: 1 }))
    // Each file as it is read, then its directories, children first; then the next top-level file.
    expect(added.map(a => a.path)).toEqual(['dir/a é.txt', 'dir/sub/big.bin', 'dir/sub', 'dir', 'c.txt'])
    const expected = await importerCids(files.slice(0, 3))
    for (const path of ['dir/a é.txt', 'dir/sub/big.bin', 'dir/sub', 'dir']) {
      expect(added.find(a => a.path === path)?.cid.toString(), path).toBe(expected.get(path))
    }
    const dir = added.find(a => a.path === 'dir')?.cid.toString() as string
    // Compared whole, not byte by byte: a slow compare holds the loop past the keep-alive timeouts.
    expect((await catBytes(client, `${dir}/sub/big.bin`)).equals(big)).toBe(true)
    expect((await catBytes(client, `/ipfs/${dir}/a é.txt`)).toString()).toBe('first')
    // What Kubo would pin: each top-level entry.
    expect((await listed()).sort()).toEqual([dir, added.at(-1)?.cid.toString()].sort())
  })

  it('wraps with a directory as Kubo does', async () => {
    const { client } = await kubo()
    const added = await all(client.addAll([{ path: 'example.jpg', content: new Uint8Array(0) }], { wrapWithDirectory: true }))
    // Kubo's own example in `ipfs add --help` (an empty example.jpg).
    expect(added.map(a => [a.path, a.cid.toString()])).toEqual([
      ['example.jpg', 'QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH'],
      ['', 'QmaG4FuMqEBnQNn3C8XJ5bpW8kLs7zq2ZXgHptJHbKDDVx']
    ])
    const wrapped = await client.add({ path: 'a.txt', content: encoder.encode('hello world') }, { wrapWithDirectory: true })
    expect(wrapped.path).toBe('')
    expect((await catBytes(client, `${wrapped.cid.toString()}/a.txt`)).toString()).toBe('hello world')
  })

  it('only hashes with only-hash, keeps with pin=false, and says why a cat fails', async () => {
    const { client, listed } = await kubo()
    const hashed = await client.add({ path: 'h.txt', content: encoder.encode('only hashed') }, { onlyHash: true, cidVersion: 1 })
    expect(hashed.cid.toString()).toBe((await importerCids([{ path: 'h.txt', content: encoder.encode('only hashed') }])).get('h.txt'))
    await expect(catBytes(client, hashed.cid.toString())).rejects.toThrow(`block ${hashed.cid.toString()} is not stored here`)
    expect(await listed()).toEqual([])
    const kept = await client.add({ path: 'p.txt', content: encoder.encode('not pinned') }, { pin: false })
    expect((await catBytes(client, kept.cid.toString())).toString()).toBe('not pinned')
    await expect(client.add(encoder.encode('x'), { hashAlg: 'blake2b-256' })).rejects.toThrow('hash=blake2b-256 is not implemented by this service')
    const dir = await client.add({ path: 'd/x.txt', content: encoder.encode('x') })
    await expect(catBytes(client, dir.cid.toString())).rejects.toThrow('this dag node is a directory')
  })

  it('reports progress as Kubo does: a line each 256 KiB of a file, and at its end', async () => {
    const { client } = await kubo()
    const seen: Array<[number, string | undefined]> = []
    const added = await client.add({ path: 'big.bin', content: randomBytes(700 * 1024) }, { progress: (bytes, path) => { seen.push([bytes, path]) } })
    expect(added.size).toBeGreaterThan(700 * 1024)
    expect(seen.length).toBeGreaterThanOrEqual(3)
    expect(seen.every(([, path]) => path === 'big.bin')).toBe(true)
    expect(seen.map(([bytes]) => bytes)).toEqual([...seen.map(([bytes]) => bytes)].sort((a, b) => a - b))
    expect(seen.at(-1)?.[0]).toBe(700 * 1024)
  })

  it('imports a complete CAR pinned, an incomplete one naming its missing block, and answers no root with pin-roots=false', async () => {
    const { client } = await kubo()
    const whole = fileBlocks(randomBytes(600 * 1024))
    const done = await all(client.dag.import([await carOf([whole.root], whole.blocks)]))
    expect(done.map(d => [d.root.cid.toString(), d.root.pinErrorMsg])).toEqual([[whole.root.toString(), '']])

    const cut = fileBlocks(randomBytes(600 * 1024))
    const missing = cut.blocks[1] as { cid: CID }
    const partial = await all(client.dag.import([await carOf([cut.root], cut.blocks.filter(b => b !== missing))]))
    expect(partial.length).toBe(1)
    expect(partial[0]?.root.pinErrorMsg).toContain(`block ${missing.cid.toString()} is neither in the CAR nor stored here`)

    // Two CARs in one request: the client names the second part file-1.
    const [one, two] = [fileBlocks(randomBytes(300 * 1024)), fileBlocks(randomBytes(2000))]
    const each = (car: Uint8Array): AsyncIterable<Uint8Array> => (async function * () { yield car })()
    const both = await all(client.dag.import([each(await carOf([one.root], one.blocks)), each(await carOf([two.root], two.blocks))]))
    expect(both.map(d => [d.root.cid.toString(), d.root.pinErrorMsg])).toEqual([[one.root.toString(), ''], [two.root.toString(), '']])

    const quiet = fileBlocks(randomBytes(1000))
    expect(await all(client.dag.import([await carOf([quiet.root], quiet.blocks)], { pinRoots: false }))).toEqual([])
    expect((await catBytes(client, quiet.root.toString())).equals(quiet.blocks[0]?.bytes as Uint8Array)).toBe(true)
  })
})
