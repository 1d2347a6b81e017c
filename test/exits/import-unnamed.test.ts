import { describe, expect, it } from 'vitest'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { carOf } from '../helpers/car.js'
import { EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'
import { ok, shareKey, writeSomeFiles } from '../cli/content-devices.js'
import { exitDevice, freshService, readCar } from './exit-devices.js'

describe.skipIf(EXTERNAL)('import --car asks deals for what its chain names only', () => {
  it('a DAG the CAR carries beside the chain is put on the service but asked no deal, and the import names it', async () => {
    const root = await useTempDir()
    const one = await freshService(root, 'one')
    const two = await freshService(root, 'two')
    const a = await exitDevice(root, one, 'a')
    const c = await exitDevice(root, two, 'c')
    await shareKey(a, c)
    await writeFile(c.config, (await readFile(c.config, 'utf8')).replace('deal = false', 'deal = true'))
    await writeSomeFiles(a.folder, 'f', { largeBytes: 300_000, small: 3 })
    await ok(a, ['snapshot'])
    const exported = join(root, 'history.car')
    const done = JSON.parse((await ok(a, ['export', '--car', exported, '--content', '--json'])).stdout.trim().split('\n').at(-1) as string) as { root: string, publish: string, objects: number }

    // The same CAR with one more DAG in it: a block no object of the chain links to.
    const { roots, blocks } = await readCar(exported)
    const stray = new TextEncoder().encode('not part of any publish')
    const strayCid = CID.createV1(raw.code, await sha256.digest(stray))
    const car = join(root, 'with-stray.car')
    await writeFile(car, await carOf([CID.parse(roots[0] as string)], [...[...blocks].map(([cid, bytes]) => ({ cid: CID.parse(cid), bytes })), { cid: strayCid, bytes: stray }]))

    const lines = (await ok(c, ['import', '--car', car, '--json'])).stdout.trim().split('\n').map(l => JSON.parse(l) as { type: string, step?: string })
    // Each step told as it starts, in order, then the result.
    expect(lines.filter(l => l.type === 'step').map(l => l.step)).toEqual(['scan', 'upload', 'check', 'deal', 'pointer'])
    const imported = lines.at(-1) as unknown as { objects: number, dealsAsked: number, unnamed: string[] }
    expect(imported.objects).toBe(done.objects + 1)
    expect(imported.unnamed).toEqual([strayCid.toString()])
    expect(imported.dealsAsked).toBe(done.objects)
    const asks = (): number => two.local.requestLog().filter(r => r.route === 'add_cid').length
    expect(asks()).toBe(done.objects)
    // Run again: every object already has a deal (the service lists it), so none is asked again.
    const dealt = async (): Promise<true | undefined> => (await two.clients.deals.dealStatus(done.publish)).length > 0 ? true : undefined
    await until(dealt, 30_000, 'the first import\'s deals listed')
    const again = await ok(c, ['import', '--car', car])
    expect(asks()).toBe(done.objects)
    expect(again.stdout).toContain(`0 deals asked for (${done.objects} objects already had one, not asked again)`)
    expect(again.stdout).toContain(`1 other object of the CAR is not named by its chain (not a publish, segment or stored file of it): left without a deal and not copied to mirrors: ${strayCid.toString()}`)
  }, 600_000)
})
