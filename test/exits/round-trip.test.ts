import { describe, expect, it } from 'vitest'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { exporter } from 'ipfs-unixfs-exporter'
import { CID } from 'multiformats/cid'
import { EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentObjects, ok, shareKey, tree, writeSomeFiles } from '../cli/content-devices.js'
import { manifestAt } from '../cli/v2-cli.js'
import { exitDevice, FIRST, freshService, historyOf, pointerOf, publishedAt, readCar, SECOND } from './exit-devices.js'

interface ObjectLine { type: string, cid: string, kind: string }

describe.skipIf(EXTERNAL)('export --car, import --car: a whole history moved to a fresh service', () => {
  it('a CAR an independent reader reads back holds every object with its CID; imported into a fresh service, a fresh device restores the index and every file byte for byte, at the last publish and an older one', async () => {
    const root = await useTempDir()
    const one = await freshService(root, 'one')
    const two = await freshService(root, 'two')
    const a = await exitDevice(root, one, 'a')
    const c = await exitDevice(root, two, 'c')
    await shareKey(a, c)

    await writeSomeFiles(a.folder, 'first', { largeBytes: 3 * 1024 * 1024 + 5, small: 30 })
    // Each publish at its own time on the test clock, an hour apart, instead of a wait between them.
    await ok(a, ['snapshot'], publishedAt(FIRST))
    const firstTree = await tree(a.folder)
    const between = new Date(Date.parse(FIRST) + 30 * 60_000).toISOString()
    await writeSomeFiles(a.folder, 'second', { largeBytes: 2 * 1024 * 1024 + 7, small: 20 })
    await rm(join(a.folder, 'first', 'small-0.txt'))
    await ok(a, ['snapshot'], publishedAt(SECOND))
    const history = await historyOf(a)
    expect(history.length).toBe(2)

    const car = join(root, 'history.car')
    const exported = await ok(a, ['export', '--car', car, '--content', '--json'])
    const lines = exported.stdout.trim().split('\n').map(l => JSON.parse(l) as ObjectLine & Record<string, unknown>)
    const done = lines.at(-1) as unknown as { type: string, root: string, publish: string, publishes: number }
    expect(done.type).toBe('done')
    expect(done.publish).toBe(history[0]?.cid)
    expect(done.publishes).toBe(2)
    const objects = lines.filter(l => l.type === 'object')

    // Read back by @ipld/car and the UnixFS exporter, not by cidsync.
    const { roots, blocks } = await readCar(car)
    expect(roots).toEqual([done.root])
    const blockstore = { get: async function * (cid: CID) { const b = blocks.get(cid.toString()); if (b === undefined) throw new Error(`no block ${cid.toString()}`); yield b } }
    const wanted = new Set<string>(history.map(h => h.cid))
    for (const h of history) for (const d of (await manifestAt(one, a as never, root, h.cid)).devices) for (const s of d.segments) wanted.add(s.cid)
    for (const object of contentObjects(a)) wanted.add(object)
    expect(new Set(objects.map(o => o.cid))).toEqual(wanted)
    for (const cid of wanted) {
      const entry = await exporter(CID.parse(cid), blockstore as never)
      expect(entry.type === 'file' || entry.type === 'raw', `${cid} is a UnixFS file`).toBe(true)
      const chunks: Uint8Array[] = []
      for await (const chunk of (entry as { content: () => AsyncIterable<Uint8Array> }).content()) chunks.push(chunk)
      const fromService = Buffer.from(await (await fetch(`${one.local.url}/ipfs/${cid}`)).arrayBuffer())
      expect(Buffer.concat(chunks).equals(fromService), `${cid} read from the CAR is the service's object`).toBe(true)
    }

    // A fresh service, a fresh device: everything from the CAR alone.
    const imported = await ok(c, ['import', '--car', car])
    expect(imported.stdout).toContain('the pointer moved there')
    expect(await pointerOf(c)).toBe(history[0]?.cid)
    await ok(c, ['restore'])
    expect((await historyOf(c)).map(h => h.cid)).toEqual(history.map(h => h.cid))
    const back = join(root, 'back')
    await ok(c, ['restore', '--files', '--to', back])
    expect(await tree(join(back, 'notes'))).toEqual(await tree(a.folder))
    const older = join(root, 'older')
    await ok(c, ['restore', '--files', '--at', between, '--to', older])
    expect(await tree(join(older, 'notes'))).toEqual(firstTree)

    // Again: nothing new, the pointer already there, every step done again without harm.
    const again = await ok(c, ['import', '--car', car])
    expect(again.stdout).toContain('the pointer already held it')
  }, 600_000)
})
