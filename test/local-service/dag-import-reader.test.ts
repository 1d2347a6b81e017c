import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import { varint } from 'multiformats'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { carOf } from '../helpers/car.js'

type Service = Awaited<ReturnType<typeof localServiceUnderTest>>
interface Block { cid: CID, bytes: Uint8Array }

async function raw (bytes: Uint8Array): Promise<Block> {
  return { cid: CID.createV1(0x55, await sha256.digest(bytes)), bytes }
}

async function post (service: Service, car: Uint8Array): Promise<{ status: number, text: string }> {
  const form = new FormData()
  form.append('file', new Blob([car], { type: 'application/vnd.ipld.car' }), 'x.car')
  const response = await fetch(`${service.local.url}/api/v0/dag/import?stats=true`, { method: 'POST', body: form, headers: { authorization: `Bearer ${service.apiKey}` } })
  return { status: response.status, text: await response.text() }
}

async function servedBytes (service: Service, cid: CID): Promise<Buffer | number> {
  const response = await fetch(`${service.local.url}/ipfs/${cid.toString()}?format=raw`)
  return response.status === 200 ? Buffer.from(await response.arrayBuffer()) : response.status
}

/** Raw blocks of uneven sizes, 4.6 MiB in all: several fall across the route's 1 MiB reads. */
async function unevenBlocks (): Promise<Block[]> {
  const blocks: Block[] = []
  for (const size of [100, 262_144, 300_001, 1_048_000, 70_000, 2_000_000, 131_073, 999_999, 3]) blocks.push(await raw(randomBytes(size)))
  return blocks
}

/** Where each block's section starts in the CAR. */
async function sectionStarts (blocks: Block[]): Promise<number[]> {
  let at = (await carOf([(blocks[0] as Block).cid], [])).byteLength
  return blocks.map(block => {
    const start = at
    at += varint.encodingLength(block.cid.bytes.byteLength + block.bytes.byteLength) + block.cid.bytes.byteLength + block.bytes.byteLength
    return start
  })
}

describe.skipIf(EXTERNAL)('local service: dag/import reads a CAR through one buffer', () => {
  it('stores every block byte for byte, blocks of up to 2 MB falling across its reads', async () => {
    const service = await localServiceUnderTest()
    const blocks = await unevenBlocks()
    const answer = await post(service, await carOf([(blocks[0] as Block).cid], blocks))
    expect(answer.status, answer.text).toBe(200)
    expect(answer.text).toContain(`"BlockCount":${blocks.length},"BlockBytesCount":${blocks.reduce((n, b) => n + b.bytes.byteLength, 0)}`)
    // Read from the store, not the gateway: GET /ipfs/{cid}?format=raw of a block of about 1 MiB
    // or more resets the connection (main too; left for the gateway's room).
    for (const block of blocks) expect(Buffer.from(await service.local.readStoredBlock(block.cid) ?? []).equals(block.bytes), block.cid.toString()).toBe(true)
  })

  it('refuses a block forged past the first MiB, naming it, and keeps nothing of the request', async () => {
    const service = await localServiceUnderTest()
    const blocks = await unevenBlocks()
    const forged = blocks.map((b, i) => i === 5 ? { cid: b.cid, bytes: Uint8Array.from(b.bytes, (x, j) => j === 1_500_000 ? x ^ 1 : x) } : b)
    const answer = await post(service, await carOf([(blocks[0] as Block).cid], forged))
    expect(answer.status).toBe(400)
    expect(answer.text).toContain(`block ${(blocks[5] as Block).cid.toString()} does not match its CID`)
    for (const block of blocks.slice(0, 5)) expect(await servedBytes(service, block.cid), 'a block before it').toBe(404)
  })

  it('refuses a CAR cut inside a section or its length, keeping nothing; one cut between sections is read as @ipld/car read it', async () => {
    const service = await localServiceUnderTest()
    const blocks = await unevenBlocks()
    const car = await carOf([(blocks[0] as Block).cid], blocks)
    const starts = await sectionStarts(blocks)
    for (const cut of [(starts[6] as number) - 1000, (starts[6] as number) + 1]) {
      const answer = await post(service, car.subarray(0, cut))
      expect(answer.status, `cut at ${cut}`).toBe(400)
      expect(answer.text).toMatch(/bad CAR file after \d+ blocks/)
      expect(await servedBytes(service, (blocks[1] as Block).cid), 'a block before the cut').toBe(404)
    }
    const whole = await post(service, car.subarray(0, starts[6]))
    expect(whole.status, whole.text).toBe(200)
    expect(whole.text).toContain('"BlockCount":6')
  })

  it('refuses a section announcing more than a block and its CID, and a header announcing more than 1 MiB', async () => {
    const service = await localServiceUnderTest()
    const header = await carOf([(await raw(Uint8Array.of(1))).cid], [])
    const huge = new Uint8Array(varint.encodingLength(3 * 1024 * 1024))
    varint.encodeTo(3 * 1024 * 1024, huge)
    const section = await post(service, Buffer.concat([header, huge, randomBytes(64 * 1024)]))
    expect(section.status).toBe(400)
    expect(section.text).toContain('a CAR section announces 3145728 bytes')
    const head = await post(service, Buffer.concat([huge, randomBytes(1024)]))
    expect(head.status).toBe(400)
    expect(head.text).toContain('not a CAR file: the CAR header announces 3145728 bytes')
  })
})
