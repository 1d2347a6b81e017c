import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { request } from 'node:http'
import * as dagPb from '@ipld/dag-pb'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { varint } from 'multiformats'
import { OPEN_POLICY } from '../../src/local-service/index.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { until, within } from '../helpers/wait.js'
import { carOf } from '../helpers/car.js'

type Service = Awaited<ReturnType<typeof localServiceUnderTest>>
interface Block { cid: CID, bytes: Uint8Array }


async function post (service: Service, car: Uint8Array): Promise<{ status: number, text: string }> {
  const form = new FormData()
  form.append('file', new Blob([car], { type: 'application/vnd.ipld.car' }), 'x.car')
  const response = await fetch(`${service.local.url}/api/v0/dag/import`, { method: 'POST', body: form, headers: { authorization: `Bearer ${service.apiKey}` } })
  return { status: response.status, text: await response.text() }
}

async function raw (bytes: Uint8Array): Promise<Block> {
  return { cid: CID.createV1(0x55, await sha256.digest(bytes)), bytes }
}

describe.skipIf(EXTERNAL)('local service: dag/import against hostile CARs', () => {
  it('charges the quota for the bytes a request stores, whatever size its DAG claims', async () => {
    const service = await localServiceUnderTest({ policy: { ...OPEN_POLICY, maxBytesPerAccount: 600 * 1024 } })
    let refused = 0
    for (let i = 0; i < 4; i++) {
      const leaves = await Promise.all([0, 1].map(async () => await raw(randomBytes(200 * 1024))))
      // A dag-pb node with no UnixFS data: it claims nothing of the 400 KiB under it.
      const node = dagPb.encode(dagPb.prepare({ Links: leaves.map(l => ({ Hash: l.cid })) }))
      const root = { cid: CID.createV1(dagPb.code, await sha256.digest(node)), bytes: node }
      const answer = await post(service, await carOf([root.cid], [root, ...leaves]))
      if (answer.status === 413) refused++
      else expect(answer.status, answer.text).toBe(200)
    }
    // 1.6 MiB asked for against 600 KiB: the third request at the latest passes the quota.
    expect(refused).toBeGreaterThanOrEqual(2)
  })

  it('charges a root that came alone first for the blocks that come under it later', async () => {
    const service = await localServiceUnderTest({ policy: { ...OPEN_POLICY, maxBytesPerAccount: 600 * 1024 } })
    let refused = 0
    for (let i = 0; i < 4; i++) {
      const leaves = await Promise.all([0, 1].map(async () => await raw(randomBytes(200 * 1024))))
      const node = dagPb.encode(dagPb.prepare({ Links: leaves.map(l => ({ Hash: l.cid })) }))
      const root = { cid: CID.createV1(dagPb.code, await sha256.digest(node)), bytes: node }
      expect((await post(service, await carOf([root.cid], [root]))).status).toBe(200)
      const answer = await post(service, await carOf([root.cid], [root, ...leaves]))
      if (answer.status === 413) refused++
      else expect(answer.status, answer.text).toBe(200)
    }
    expect(refused).toBeGreaterThanOrEqual(2)
  })

  it('refuses a block that is not valid dag-pb with a 400 naming it', async () => {
    const service = await localServiceUnderTest()
    const junk = Uint8Array.of(0xff, 0xff, 0xff)
    const block = { cid: CID.createV1(dagPb.code, await sha256.digest(junk)), bytes: junk }
    const answer = await post(service, await carOf([block.cid], [block]))
    expect(answer.status).toBe(400)
    expect(answer.text).toContain(`block ${block.cid.toString()} is not valid dag-pb`)
  })

  it('keeps a block another account uploaded while a failing import that brought it first was still running', async () => {
    const service = await localServiceUnderTest()
    const content = randomBytes(100 * 1024)
    const block = await raw(content)
    const forged = { cid: (await raw(randomBytes(10))).cid, bytes: Uint8Array.of(1, 2, 3) }
    const car = await carOf([block.cid], [block, forged])
    // The import stops right before its forged block: the good one is stored, the request still open.
    const cut = car.byteLength - (forged.cid.bytes.byteLength + forged.bytes.byteLength + 1)
    const boundary = 'xracex'
    const req = request(`${service.local.url}/api/v0/dag/import`, { method: 'POST', headers: { authorization: `Bearer ${service.apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}` } })
    const answered = new Promise<number>((resolve, reject) => { req.on('response', res => { res.resume(); resolve(res.statusCode ?? 0) }); req.on('error', reject) })
    req.write(Buffer.concat([Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="x.car"\r\ncontent-type: application/vnd.ipld.car\r\n\r\n`), car.subarray(0, cut)]))
    await until(async () => (await fetch(`${service.local.url}/ipfs/${block.cid.toString()}?format=raw`)).status === 200 ? true : undefined, 10_000, 'the imported block to be readable')
    // Meanwhile the same bytes are uploaded, as the victim's own file (another account: the same here, the store is shared).
    const form = new FormData()
    form.append('file', new Blob([content]), 'mine.bin')
    const added = await fetch(`${service.local.url}/api/v0/add?cid-version=1&raw-leaves=true`, { method: 'POST', body: form, headers: { authorization: `Bearer ${service.apiKey}` } })
    expect(added.status, await added.text()).toBe(200)
    req.end(Buffer.concat([car.subarray(cut), Buffer.from(`\r\n--${boundary}--\r\n`)]))
    expect(await within(answered, 10_000, 'the forged import to be refused')).toBe(400)
    expect((await fetch(`${service.local.url}/ipfs/${block.cid.toString()}`)).status, 'the uploaded file').toBe(200)
  })

  it('refuses a section longer than a block can be as soon as its length is read, not once it arrived', async () => {
    const service = await localServiceUnderTest()
    const header = await carOf([(await raw(Uint8Array.of(1))).cid], [])
    const length = 1024 * 1024 * 1024
    const prefix = new Uint8Array(varint.encodingLength(length))
    varint.encodeTo(length, prefix)
    const boundary = 'xhostilex'
    const cid = (await raw(Uint8Array.of(2))).cid.bytes
    const head = Buffer.concat([Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="x.car"\r\ncontent-type: application/vnd.ipld.car\r\n\r\n`), header, prefix, cid])
    const answered = new Promise<number>((resolve, reject) => {
      const req = request(`${service.local.url}/api/v0/dag/import`, { method: 'POST', headers: { authorization: `Bearer ${service.apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}` } }, res => { resolve(res.statusCode ?? 0); res.resume(); req.destroy() })
      req.on('error', err => { if ((err as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(err) })
      req.write(head)
      // A few MiB of the gigabyte it announced, then the body stays open: the service must not wait for the rest.
      for (let i = 0; i < 4; i++) req.write(randomBytes(1024 * 1024))
    })
    expect(await within(answered, 10_000, 'the answer to an announced 1 GiB block')).toBe(400)
  })

  it('follows a CARv2 to its payload, and refuses one whose data offset points inside its own header', async () => {
    const service = await localServiceUnderTest()
    const leaf = await raw(randomBytes(1000))
    const v1 = await carOf([leaf.cid], [leaf])
    const v2 = (dataOffset: number): Uint8Array => {
      const fixed = Buffer.alloc(40)
      fixed.writeBigUInt64LE(BigInt(dataOffset), 16)
      fixed.writeBigUInt64LE(BigInt(v1.byteLength), 24)
      fixed.writeBigUInt64LE(0n, 32)
      return Buffer.concat([Uint8Array.of(0x0a, 0xa1, 0x67, 0x76, 0x65, 0x72, 0x73, 0x69, 0x6f, 0x6e, 0x02), fixed, Buffer.alloc(Math.max(0, dataOffset - 51)), v1])
    }
    const honest = await post(service, v2(64))
    expect(honest.status, honest.text).toBe(200)
    expect(honest.text).toContain(leaf.cid.toString())
    const lying = await post(service, v2(20))
    expect(lying.status).toBe(400)
  })
})
