import '../helpers/with-resolvers.js'
import { describe, expect, it, onTestFinished } from 'vitest'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { car as heliaCar } from '@helia/car'
import { CarReader } from '@ipld/car'
import * as dagPb from '@ipld/dag-pb'
import { MemoryBlockstore } from 'blockstore-core'
import { MemoryDatastore } from 'datastore-core'
import { createHelia } from 'helia'
import { createLibp2p } from 'libp2p'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { carOf } from '../helpers/car.js'
import { EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { ok, shareKey, type ContentDevice } from '../cli/content-devices.js'
import { exitDevice, freshService, historyOf, pointerOf, readCar, twoPublishes, type HistoryRow } from './exit-devices.js'

interface Done { type: string, root: string, publish: string, blocks: number }

/** Device a on its own service, published twice, its whole history exported with content. */
async function exported (root: string): Promise<{ a: ContentDevice, car: string, done: Done, history: HistoryRow[] }> {
  const { a } = await twoPublishes(root)
  const car = join(root, 'history.car')
  const done = JSON.parse((await ok(a, ['export', '--car', car, '--content', '--json'])).stdout.trim().split('\n').at(-1) as string) as Done
  return { a, car, done, history: await historyOf(a) }
}

/** Every block reachable from `root` through dag-pb links, walked with @ipld/dag-pb alone (raw blocks link nothing). */
function reachable (root: string, blocks: ReadonlyMap<string, Uint8Array>): Set<string> {
  const reached = new Set<string>()
  const pending = [root]
  for (let cid = pending.pop(); cid !== undefined; cid = pending.pop()) {
    if (reached.has(cid)) continue
    reached.add(cid)
    const bytes = blocks.get(cid)
    expect(bytes, `${cid} is linked and in the CAR`).toBeDefined()
    if (CID.parse(cid).code !== dagPb.code) continue
    for (const link of dagPb.decode(bytes as Uint8Array).Links) pending.push(link.Hash.toString())
  }
  return reached
}

function node (blocks: ReadonlyMap<string, Uint8Array>, cid: string): dagPb.PBNode {
  return dagPb.decode(blocks.get(cid) as Uint8Array)
}

function linkOf (n: dagPb.PBNode, name: string): string | undefined {
  return n.Links.find(l => l.Name === name)?.Hash.toString()
}

describe.skipIf(EXTERNAL)('an exported CAR is a pinnable whole', () => {
  it('its root links every block of it (a walk with @ipld/dag-pb reaches them all); Helia imports it, pins the root recursively, and a garbage collection keeps every block', async () => {
    const root = await useTempDir()
    const { car, done, history } = await exported(root)
    const { roots, blocks } = await readCar(car)
    expect(roots).toEqual([done.root])
    expect(done.publish).toBe(history[0]?.cid)
    expect(blocks.size).toBe(done.blocks)

    // Every block of the CAR hangs under its root.
    expect(reachable(done.root, blocks)).toEqual(new Set(blocks.keys()))
    // The root names the publish, its segments, the content, and the publish before it; that one names the first publish, and nothing before it.
    const head = node(blocks, done.root)
    expect(head.Data).toBeUndefined()
    expect(head.Links.map(l => l.Name)).toEqual(['content', 'manifest', 'previous', 'segments'])
    expect(linkOf(head, 'manifest')).toBe(history[0]?.cid)
    const previous = node(blocks, linkOf(head, 'previous') as string)
    expect(previous.Links.map(l => l.Name)).toEqual(['manifest', 'segments'])
    expect(linkOf(previous, 'manifest')).toBe(history[1]?.cid)

    // An independent IPFS implementation: Helia, with no network, its blocks and pins in memory.
    const datastore = new MemoryDatastore()
    const libp2p = await createLibp2p({ datastore, start: false } as never)
    const helia = await createHelia({ libp2p, datastore, blockstore: new MemoryBlockstore(), blockBrokers: [], routers: [] } as never)
    onTestFinished(async () => { await helia.stop() })
    await heliaCar(helia).import(await CarReader.fromBytes(await readFile(car)))
    const stray = new TextEncoder().encode('held by no pin')
    const strayCid = CID.createV1(raw.code, await sha256.digest(stray))
    await helia.blockstore.put(strayCid, stray)
    for await (const pinned of helia.pins.add(CID.parse(done.root))) expect(pinned).toBeDefined()
    await helia.gc()
    expect(await helia.blockstore.has(strayCid), 'the collection ran: an unpinned block is gone').toBe(false)
    const missing: string[] = []
    for (const cid of blocks.keys()) if (!await helia.blockstore.has(CID.parse(cid))) missing.push(cid)
    expect(missing).toEqual([])
  }, 600_000)

  it('a CAR of an older cidsync, rooted at its manifest with no plain root, still imports: the pointer moves to its publish, and a fresh device restores it', async () => {
    const root = await useTempDir()
    const { a, car, done, history } = await exported(root)
    const { blocks } = await readCar(car)
    // What an older export wrote: the same objects, rooted at the manifest, without the root's nodes.
    const objects = [...blocks].filter(([cid, bytes]) => CID.parse(cid).code !== dagPb.code || dagPb.decode(bytes).Data !== undefined)
    expect(objects.length).toBeLessThan(blocks.size)
    const old = join(root, 'old.car')
    await writeFile(old, await carOf([CID.parse(done.publish)], objects.map(([cid, bytes]) => ({ cid: CID.parse(cid), bytes }))))

    const two = await freshService(root, 'two')
    const c = await exitDevice(root, two, 'c')
    await shareKey(a, c)
    const imported = JSON.parse((await ok(c, ['import', '--car', old, '--json'])).stdout.trim().split('\n').at(-1) as string) as { root: string, publish: string, moved: boolean, unnamed: string[] }
    expect(imported).toMatchObject({ root: done.publish, publish: done.publish, moved: true, unnamed: [] })
    expect(await pointerOf(c)).toBe(history[0]?.cid)
    await ok(c, ['restore'])
    expect((await historyOf(c)).map(h => h.cid)).toEqual(history.map(h => h.cid))
  }, 600_000)
})
