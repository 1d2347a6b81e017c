import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import * as dagPb from '@ipld/dag-pb'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { scanCar } from '../../src/exits/scan-car.js'
import { carOf } from '../helpers/car.js'
import { EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { ok, shareKey, writeSomeFiles } from '../cli/content-devices.js'
import { exitDevice, freshService, readCar } from './exit-devices.js'

interface Block { cid: CID, bytes: Uint8Array }

/** A DAG of `fanout` nodes under one root, each over `leaves` raw blocks: root first, as `export` writes. */
async function dag (tag: string, fanout: number, leaves: number): Promise<Block[]> {
  const nodes: Block[][] = []
  for (let n = 0; n < fanout; n++) {
    const children: Block[] = []
    for (let l = 0; l < leaves; l++) {
      const bytes = new TextEncoder().encode(`${tag}/${n}/${l}`)
      children.push({ cid: CID.createV1(raw.code, await sha256.digest(bytes)), bytes })
    }
    const bytes = dagPb.encode(dagPb.prepare({ Links: children.map(c => ({ Hash: c.cid, Tsize: c.bytes.byteLength })) }))
    nodes.push([{ cid: CID.createV1(dagPb.code, await sha256.digest(bytes)), bytes }, ...children])
  }
  const bytes = dagPb.encode(dagPb.prepare({ Links: nodes.map(n => ({ Hash: (n[0] as Block).cid, Tsize: 1 })) }))
  return [{ cid: CID.createV1(dagPb.code, await sha256.digest(bytes)), bytes }, ...nodes.flat()]
}

describe('a CAR with more blocks than one request may bring', () => {
  it('is planned in parts cut between objects, and where it must within one larger than a part', async () => {
    const dir = await useTempDir()
    const a = await dag('a', 2, 3) // 9 blocks
    const b = await dag('b', 1, 2) // 4 blocks
    const big = await dag('c', 3, 5) // 19 blocks
    const path = join(dir, 'x.car')
    await writeFile(path, await carOf([(a[0] as Block).cid], [...a, ...b, ...big]))
    const scanned = await scanCar(path, undefined, { parts: { target: 8, blocks: 12, links: 100 } })
    expect(scanned.parts?.map(p => p.blocks)).toEqual([9, 4, 12, 7])
    // The parts are the sections, end to end, without a gap.
    const parts = scanned.parts ?? []
    for (let i = 1; i < parts.length; i++) expect(parts[i]?.start).toBe(parts[i - 1]?.end)
    expect(parts.reduce((sum, p) => sum + p.blocks, 0)).toBe(scanned.blocks)
  })
})

describe.skipIf(EXTERNAL)('import --car past 250,000 blocks', () => {
  it('sends the CAR in parts: the pointer moves, and each object is listed once', async () => {
    const root = await useTempDir()
    const one = await freshService(root, 'one')
    const two = await freshService(root, 'two')
    const a = await exitDevice(root, one, 'a')
    const c = await exitDevice(root, two, 'c')
    await shareKey(a, c)
    await writeSomeFiles(a.folder, 'f', { largeBytes: 100_000, small: 2 })
    await ok(a, ['snapshot'])
    const exported = join(root, 'history.car')
    const done = JSON.parse((await ok(a, ['export', '--car', exported, '--content', '--json'])).stdout.trim().split('\n').at(-1) as string) as { root: string, objects: number }

    // Three more DAGs of 100,101 blocks each beside the chain: more than the service's 250,000 a request.
    const { roots, blocks } = await readCar(exported)
    const extra = [await dag('x', 100, 1000), await dag('y', 100, 1000), await dag('z', 100, 1000)]
    const car = join(root, 'large.car')
    await writeFile(car, await carOf([CID.parse(roots[0] as string)], [...[...blocks].map(([cid, bytes]) => ({ cid: CID.parse(cid), bytes })), ...extra.flat()]))

    const imported = JSON.parse((await ok(c, ['import', '--car', car, '--json'])).stdout.trim().split('\n').at(-1) as string) as { moved: boolean, blocks: number, objects: number, unnamed: string[] }
    expect(imported.moved).toBe(true)
    expect(imported.blocks).toBe(blocks.size + 3 * 100_101)
    expect(imported.unnamed.sort()).toEqual(extra.map(d => (d[0] as Block).cid.toString()).sort())
    const requests = two.local.requestLog().filter(r => r.route === 'dag_import')
    expect(requests.length).toBeGreaterThanOrEqual(3)
    expect(requests.every(r => r.status === 200)).toBe(true)
    // Cut between objects: the listing holds the CAR's objects, no piece of one.
    const listed = new Set<string>()
    for await (const file of two.clients.files()) listed.add(file.cid)
    // And the plain root, listed from the last part (its nodes alone).
    expect(listed.size).toBe(done.objects + 3 + 1)
    expect(listed.has(roots[0] as string)).toBe(true)
  }, 600_000)
})
