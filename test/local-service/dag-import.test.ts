import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import type { CID } from 'multiformats/cid'
import { CID_PROFILES, CidBuilder } from '../../src/content/index.js'
import { OPEN_POLICY } from '../../src/local-service/index.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { carOf } from '../helpers/car.js'

type Service = Awaited<ReturnType<typeof localServiceUnderTest>>
interface Block { cid: CID, bytes: Uint8Array }

/** A file's UnixFS blocks under Kubo's CIDv1 profile, leaves first, root last. */
function fileBlocks (bytes: Uint8Array): { root: CID, blocks: Block[] } {
  const blocks: Block[] = []
  const builder = new CidBuilder(CID_PROFILES['kubo-cidv1'], { onBlock: (cid, block) => { blocks.push({ cid, bytes: block }) } })
  const root = builder.update(bytes).finish()
  return { root, blocks }
}


async function post (service: Service, car: Uint8Array, query = 'stats=true'): Promise<{ status: number, text: string }> {
  const form = new FormData()
  form.append('file', new Blob([car], { type: 'application/vnd.ipld.car' }), 'x.car')
  const response = await fetch(`${service.local.url}/api/v0/dag/import?${query}`, { method: 'POST', body: form, headers: { authorization: `Bearer ${service.apiKey}` } })
  return { status: response.status, text: await response.text() }
}

const served = async (service: Service, cid: CID): Promise<number> => (await fetch(`${service.local.url}/ipfs/${cid.toString()}?format=raw`)).status

async function listed (service: Service): Promise<Array<{ cid: string, size: number }>> {
  const rows: Array<{ cid: string, size: number }> = []
  for await (const record of service.clients.files()) rows.push({ cid: record.cid, size: Number(record.fileSizeInBytes) })
  return rows
}

describe.skipIf(EXTERNAL)('local service: POST /api/v0/dag/import', () => {
  it('stores every block of a CAR, answers its root and stats as Kubo does, serves the file, and lists each DAG it brought', async () => {
    const service = await localServiceUnderTest()
    const one = fileBlocks(randomBytes(700 * 1024))
    const two = fileBlocks(randomBytes(1000))
    const answer = await post(service, await carOf([one.root], [...one.blocks, ...two.blocks]))
    expect(answer.status, answer.text).toBe(200)
    const lines = answer.text.trim().split('\n').map(l => JSON.parse(l) as unknown)
    expect(lines).toEqual([{ Root: { Cid: { '/': one.root.toString() }, PinErrorMsg: '' } }, { Stats: { BlockCount: one.blocks.length + 1, BlockBytesCount: [...one.blocks, ...two.blocks].reduce((n, b) => n + b.bytes.byteLength, 0) } }])
    expect(await served(service, one.root)).toBe(200)
    expect((await listed(service)).map(r => `${r.cid}:${r.size}`).sort()).toEqual([`${one.root.toString()}:${700 * 1024}`, `${two.root.toString()}:1000`].sort())
    // Again: nothing listed twice.
    expect((await post(service, await carOf([one.root], one.blocks))).status).toBe(200)
    expect((await listed(service)).length).toBe(2)
  })

  it('refuses a block that does not match its CID with a 400 naming it, and keeps nothing of the request', async () => {
    const service = await localServiceUnderTest()
    const file = fileBlocks(randomBytes(600 * 1024))
    const forged = file.blocks.map((b, i) => i === 1 ? { cid: b.cid, bytes: Uint8Array.from(b.bytes, (x, j) => j === 7 ? x ^ 1 : x) } : b)
    const answer = await post(service, await carOf([file.root], forged))
    expect(answer.status).toBe(400)
    expect(answer.text).toContain(`block ${(file.blocks[1] as Block).cid.toString()} does not match its CID`)
    expect(await served(service, (file.blocks[0] as Block).cid), 'the block before it').toBe(404)
    expect(await listed(service)).toEqual([])
  })

  it('refuses past the account\'s quota (413) keeping nothing, and refuses what is not a CAR or a parameter it does not implement (400)', async () => {
    const service = await localServiceUnderTest({ policy: { ...OPEN_POLICY, maxBytesPerAccount: 512 * 1024 } })
    const file = fileBlocks(randomBytes(800 * 1024))
    const over = await post(service, await carOf([file.root], file.blocks))
    expect(over.status).toBe(413)
    expect(await served(service, (file.blocks[0] as Block).cid)).toBe(404)
    expect((await post(service, Buffer.from('not a car at all'))).status).toBe(400)
    const param = await post(service, await carOf([file.root], []), 'allow-big-block=true')
    expect(param.status).toBe(400)
    expect(param.text).toContain('allow-big-block')
  })

  it('pins a root as Kubo does: whole with blocks an earlier import stored, else naming the missing block; no root answered with pin-roots=false', async () => {
    const service = await localServiceUnderTest()
    const file = fileBlocks(randomBytes(700 * 1024))
    const [leaf, ...rest] = file.blocks as [Block, ...Block[]]
    const line = (text: string): unknown[] => text.trim().split('\n').map(l => JSON.parse(l) as unknown)
    // The leaves first, unpinned (as `cidsync import` sends a CAR in parts): only the stats.
    const first = await post(service, await carOf([file.root], rest.slice(0, -1)), 'pin-roots=false&stats')
    expect(line(first.text)).toEqual([{ Stats: { BlockCount: rest.length - 1, BlockBytesCount: rest.slice(0, -1).reduce((n, b) => n + b.bytes.byteLength, 0) } }])
    const incomplete = await post(service, await carOf([file.root], rest.slice(-1)), 'pin-roots=true')
    expect(line(incomplete.text)).toEqual([{ Root: { Cid: { '/': file.root.toString() }, PinErrorMsg: `the DAG is incomplete: block ${leaf.cid.toString()} is neither in the CAR nor stored here` } }])
    const whole = await post(service, await carOf([file.root, file.root], [leaf]), '')
    expect(line(whole.text)).toEqual([{ Root: { Cid: { '/': file.root.toString() }, PinErrorMsg: '' } }])
    const other = fileBlocks(randomBytes(10))
    const absent = await post(service, await carOf([other.root], []), '')
    expect(line(absent.text)).toEqual([{ Root: { Cid: { '/': other.root.toString() }, PinErrorMsg: `block ${other.root.toString()} is not stored: the CAR does not hold its root, and this service did not have it` } }])
  })
})
