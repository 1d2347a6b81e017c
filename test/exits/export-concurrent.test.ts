import { repositoryOn } from '../helpers/sync-device.js'
import { describe, expect, it, onTestFinished } from 'vitest'
import { mkdir, readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { CID } from 'multiformats/cid'
import { loadConfig } from '../../src/config/index.js'
import { connectService } from '../../src/connect/index.js'
import { exportCar } from '../../src/exits/index.js'
import { EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until, within } from '../helpers/wait.js'
import { ok, writeSomeFiles } from '../cli/content-devices.js'
import { exitDevice, freshService, inProcess } from './exit-devices.js'

/** A promise and the function that settles it. */
function gate (): { opened: Promise<void>, open: () => void } {
  let open = (): void => {}
  const opened = new Promise<void>(resolve => { open = resolve })
  return { opened, open }
}

describe.skipIf(EXTERNAL)('two exports to the same FILE at once', () => {
  it('the one that ends renames its own CAR over FILE, never the other\'s half-written temp file', async () => {
    const root = await useTempDir()
    const service = await freshService(root, 'one')
    const a = await exitDevice(root, service, 'a')
    await writeSomeFiles(a.folder, 'first', { largeBytes: 1024 * 1024 + 1, small: 5 })
    await ok(a, ['snapshot'])
    const config = loadConfig({ configPath: a.config, env: a.env, cwd: root })
    const connection = await connectService(config, a.env)
    onTestFinished(async () => { await connection.close() })
    const reference = join(root, 'reference.car')
    await exportCar(repositoryOn(config, inProcess({ clients: connection.clients, local: service.local }, { block: async cid => await service.local.readStoredBlock(cid) })), { file: reference, content: true })
    const car = join(root, 'export.car')
    const temps = async (): Promise<string[]> => (await readdir(root)).filter(n => n.includes('cidsync-export'))
    const asked = { one: false, two: false }
    const read = (held: Promise<void>, who: 'one' | 'two') => async (cid: CID): Promise<Uint8Array | undefined> => {
      asked[who] = true
      await held
      return await service.local.readStoredBlock(cid)
    }
    // The first holds at its first block, its temp file made; the second starts then and holds too.
    const first = gate()
    const one = exportCar(repositoryOn(config, inProcess({ clients: connection.clients, local: service.local }, { block: read(first.opened, 'one') })), { file: car, content: true })
    one.catch(() => {})
    await until(() => asked.one ? true : undefined, 20_000, 'the first export\'s first block')
    const stop = new AbortController()
    const second = gate()
    onTestFinished(() => { second.open(); stop.abort() })
    const two = exportCar(repositoryOn(config, inProcess({ clients: connection.clients, local: service.local }, { block: read(second.opened, 'two') })), { file: car, content: true, signal: stop.signal })
    two.catch(() => {})
    // The second has made its own file once it asks its first block.
    await until(() => asked.two ? true : undefined, 20_000, 'the second export\'s first block')
    first.open()
    const done = await within(one, 60_000, 'the first export')
    expect((await readFile(car)).equals(await readFile(reference)), 'FILE is the first export\'s whole CAR').toBe(true)
    expect(done.carBytes).toBe((await readFile(reference)).byteLength)
    stop.abort()
    second.open()
    await within(two.catch(() => {}), 60_000, 'the second export')
    expect((await readFile(car)).equals(await readFile(reference)), 'FILE after the second export gave up').toBe(true)
    expect(await temps(), 'temp files left beside FILE').toEqual([])
  })

  it('a temp file of a dead run that cannot be removed (another user\'s, in a shared directory) does not stop the export', async () => {
    const root = await useTempDir()
    const service = await freshService(root, 'one')
    const a = await exitDevice(root, service, 'a')
    await writeSomeFiles(a.folder, 'first', { largeBytes: 1000, small: 1 })
    await ok(a, ['snapshot'])
    const car = join(root, 'export.car')
    // A pid past any pid_max is no live process; a directory stands in for a file rm cannot remove.
    const stuck = join(root, '.export.car.4294967-1.cidsync-export')
    await mkdir(join(stuck, 'inside'), { recursive: true })
    await ok(a, ['export', '--car', car])
    expect((await readFile(car)).byteLength).toBeGreaterThan(0)
  })
})
