import { describe, expect, it, onTestFinished } from 'vitest'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import { sha256 } from 'multiformats/hashes/sha2'
import type { CID } from 'multiformats/cid'
import { GatewayClient, HttpClient } from '../../src/remote/index.js'
import { CidBuilder, cidProfile, type CidProfile } from '../../src/content/index.js'

/** Small leaves: many of them gathered in the builder's chunk buffer from slices that do not align. */
const SMALL: CidProfile = { ...cidProfile('kubo-cidv1'), chunkSize: 1000, maxLinks: 4 }

/** A gateway that sends the bytes in 300-byte writes, so leaves straddle the body's chunks. */
async function slicedGateway (bytes: Buffer): Promise<string> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(bytes.byteLength) })
    void (async () => {
      for (let at = 0; at < bytes.byteLength; at += 300) {
        res.write(bytes.subarray(at, at + 300))
        await new Promise(resolve => setImmediate(resolve))
      }
      res.end()
    })()
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(async () => { await new Promise(resolve => server.close(resolve)) })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe('fetchBlocks: the blocks handed to the sink', () => {
  it('stay each what its CID says when the sink holds them until the end, as the export does', async () => {
    const bytes = randomBytes(40_000)
    const builder = new CidBuilder(SMALL)
    builder.update(bytes)
    const cid = builder.finish().toString()
    const http = new HttpClient({ service: 'gateway', baseUrl: await slicedGateway(bytes), retry: { attempts: 1 } })
    onTestFinished(async () => { await http.close() })
    const held: Array<{ cid: CID, bytes: Uint8Array }> = []
    await new GatewayClient([http]).fetchBlocks(cid, SMALL, async (c, b) => { held.push({ cid: c, bytes: b }) })
    expect(held.length).toBeGreaterThan(40)
    const wrong: string[] = []
    for (const block of held) {
      const digest = await sha256.digest(block.bytes)
      if (!Buffer.from(digest.bytes).equals(Buffer.from(block.cid.multihash.bytes))) wrong.push(block.cid.toString())
    }
    expect(wrong, 'blocks whose bytes no longer hash to their CID').toEqual([])
  })
})
