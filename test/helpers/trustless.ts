import { request } from 'node:http'
import { CarReader } from '@ipld/car'
import { fallbackRouter } from '@helia/fallback-router'
import { trustlessGatewayBlockBroker } from '@helia/trustless-gateway-client'
import { exporter } from 'ipfs-unixfs-exporter'
import { CID } from 'multiformats/cid'
import { identity } from 'multiformats/hashes/identity'
import { sha256 } from 'multiformats/hashes/sha2'

/**
 * Independent readers of a trustless gateway, for tests: none of cidsync's code checks what they
 * check. Blocks are verified against their CIDs with multiformats' hashers, files are put
 * together by ipfs-unixfs-exporter, raw blocks come through Helia's trustless gateway client.
 */

export interface ByteAnswer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Buffer
  /** False when the server cut the body short (a walk it stopped, a dropped connection); status 0 when it cut before its head. */
  complete: boolean
}

/** One HTTP request to the loopback service, the whole body as bytes. */
export async function fetchBytes (base: string, path: string, options: { method?: string, headers?: Record<string, string> } = {}): Promise<ByteAnswer> {
  const url = new URL(path, base)
  return await new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, method: options.method ?? 'GET', headers: options.headers, timeout: 60_000 }, res => {
      const chunks: Buffer[] = []
      let complete = false
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => { complete = res.complete })
      res.on('error', () => {})
      res.on('close', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), complete: complete && res.complete }))
    })
    req.on('timeout', () => req.destroy(new Error(`${path} timed out`)))
    req.on('error', err => {
      if ((err as NodeJS.ErrnoException).code === 'ECONNRESET') resolve({ status: 0, headers: {}, body: Buffer.alloc(0), complete: false })
      else reject(err)
    })
    req.end()
  })
}

/** Throws unless `bytes` hash to `cid` (sha2-256 and identity: what the service stores). */
export async function checkBlock (cid: CID, bytes: Uint8Array): Promise<void> {
  const hasher = cid.multihash.code === sha256.code ? sha256 : cid.multihash.code === identity.code ? identity : undefined
  if (hasher === undefined) throw new Error(`no hasher for ${cid.toString()}`)
  const digest = await hasher.digest(bytes)
  if (!Buffer.from(digest.bytes).equals(Buffer.from(cid.multihash.bytes))) throw new Error(`block ${cid.toString()} does not hash to its CID`)
}

/** A CAR's roots and blocks in the order sent, each checked against its CID. */
export async function verifiedCar (body: Uint8Array): Promise<{ roots: CID[], blocks: Array<{ cid: CID, bytes: Uint8Array }> }> {
  const reader = await CarReader.fromBytes(body)
  const blocks: Array<{ cid: CID, bytes: Uint8Array }> = []
  for await (const block of reader.blocks()) {
    await checkBlock(block.cid, block.bytes)
    blocks.push({ cid: block.cid, bytes: block.bytes })
  }
  return { roots: await reader.getRoots(), blocks }
}

type GetBlock = (cid: CID) => Promise<Uint8Array>

/** A UnixFS file's bytes (or a range of them) put together by ipfs-unixfs-exporter from `get`. */
export async function unixfsFile (cid: CID, get: GetBlock, range?: { offset: number, length: number }): Promise<Buffer> {
  const blockstore = { get: async function * (key: CID) { yield await get(key) } }
  const entry = await exporter(cid, blockstore as unknown as Parameters<typeof exporter>[1])
  if (entry.type !== 'file' && entry.type !== 'raw') throw new Error(`${cid.toString()} is a ${entry.type}, not a file`)
  const chunks: Uint8Array[] = []
  for await (const chunk of entry.content(range)) chunks.push(chunk)
  return Buffer.concat(chunks)
}

/** Blocks by CID from a verified CAR; a block the CAR lacks is an error. */
export function fromBlocks (blocks: ReadonlyArray<{ cid: CID, bytes: Uint8Array }>): GetBlock {
  const byKey = new Map(blocks.map(b => [b.cid.toV1().toString(), b.bytes]))
  return async cid => {
    const found = byKey.get(cid.toV1().toString())
    if (found === undefined) throw new Error(`the CAR has no block ${cid.toString()}`)
    return found
  }
}

const quiet = Object.assign(() => {}, { error: () => {}, trace: () => {}, enabled: false, newScope: () => quiet })

/**
 * Blocks from `gateway` through Helia's trustless gateway block broker, routed only to that
 * gateway (its fallback router, no delegated routing, no libp2p), each checked the way Helia's
 * blockstore checks a block a broker brings: hashed against its CID before it is used.
 */
export function heliaBlocks (gateway: string): GetBlock {
  const routing = fallbackRouter({ gateways: [gateway], shuffle: false })
  const broker = trustlessGatewayBlockBroker({ allowInsecure: true, allowLocal: true })({
    routing: routing as unknown as Parameters<ReturnType<typeof trustlessGatewayBlockBroker>>[0]['routing'],
    logger: { forComponent: () => quiet } as unknown as Parameters<ReturnType<typeof trustlessGatewayBlockBroker>>[0]['logger']
  })
  const retrieve = broker.retrieve?.bind(broker)
  if (retrieve === undefined) throw new Error('this version of the trustless gateway broker cannot retrieve blocks')
  return async cid => await retrieve(cid, { validateFn: async (bytes: Uint8Array) => { await checkBlock(cid, bytes) } })
}
