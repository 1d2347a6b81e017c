import { describe, expect, it, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import * as dagPb from '@ipld/dag-pb'
import { CID } from 'multiformats/cid'
import { startLocalService } from '../../src/local-service/index.js'
import { createServiceClients } from '../../src/remote/index.js'
import { cidProfile, type CidProfile } from '../../src/content/index.js'
import { newWalletKey } from '../../src/crypto/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { fetchBytes } from '../helpers/trustless.js'
import { hideStoredBlock } from '../helpers/service-blocks.js'
import { fixedSize } from 'ipfs-unixfs-importer/chunker'
import { serviceHolding, unixfsTree, fileIn } from '../helpers/unixfs-tree.js'
import { within } from '../helpers/wait.js'

/** 1000-byte leaves, 3 links a node: a 20,000-byte file is a tree four levels deep, each node's children read ahead. */
const DEEP: CidProfile = { ...cidProfile('kubo-cidv1'), chunkSize: 1000, maxLinks: 3 }

describe('the gateway serving a whole file', () => {
  it('sends every level in order while reading ahead; a block gone from the store cuts the answer after the bytes before it, and the next request is answered', async () => {
    const dir = await useTempDir()
    const serviceDir = join(dir, 'service')
    const local = await startLocalService({ dir: serviceDir })
    onTestFinished(async () => { await local.stop() })
    const url = local.url
    let apiKey: string | undefined
    const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => apiKey, sessionToken: () => undefined })
    onTestFinished(async () => { await clients.close() })
    apiKey = (await clients.deals.login(newWalletKey())).apiKey
    const file = randomBytes(20_000)
    await writeFile(join(dir, 'file'), file)
    const root = (await clients.objects.put(join(dir, 'file'), DEEP)).cid

    const whole = await fetchBytes(url, `/ipfs/${root}`)
    expect(whole).toMatchObject({ status: 200, complete: true })
    expect(Buffer.compare(whole.body, file)).toBe(0)

    // The 8th leaf in order: reached through the root's first child's last child, so it is read ahead of where it is sent.
    const leaves: CID[] = []
    const walk = async (cid: CID): Promise<void> => {
      if (cid.code !== dagPb.code) { leaves.push(cid); return }
      const block = await fetchBytes(url, `/ipfs/${cid.toString()}?format=raw`)
      for (const link of dagPb.decode(block.body).Links) await walk(link.Hash)
    }
    await walk(CID.parse(root))
    expect(leaves.length).toBe(20)
    const restore = hideStoredBlock(serviceDir, (leaves[7] as CID).toString())
    const cut = await fetchBytes(url, `/ipfs/${root}`)
    expect(cut.complete).toBe(false)
    expect(cut.body.byteLength).toBeLessThanOrEqual(7000)
    expect(Buffer.compare(cut.body, file.subarray(0, cut.body.byteLength))).toBe(0)
    restore()
    const again = await fetchBytes(url, `/ipfs/${root}`)
    expect(again).toMatchObject({ status: 200, complete: true })
    expect(Buffer.compare(again.body, file)).toBe(0)
  })

  it('answers 404 before any byte when the first block of the file is missing, for GET and HEAD, and the next request is answered', async () => {
    const tree = await unixfsTree({ 'big.bin': randomBytes(3_000) }, { chunker: fixedSize({ chunkSize: 1000 }) })
    const file = fileIn(tree, 'big.bin')
    const first = dagPb.decode(file.bytes).Links[0]?.Hash as CID
    const { url } = await serviceHolding(tree, [first.toString()])
    for (const method of ['GET', 'HEAD']) {
      const answer = await within(fetchBytes(url, `/ipfs/${file.cid.toString()}`, { method }), 10_000, `the ${method} answer`)
      expect(answer.status, method).toBe(404)
      if (method === 'GET') expect(answer.body.toString()).toContain(first.toString())
    }
    expect((await fetchBytes(url, `/ipfs/${file.cid.toString()}?format=raw`)).status).toBe(200)
  })
})
