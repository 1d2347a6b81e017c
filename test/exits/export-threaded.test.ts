import { repositoryOn } from '../helpers/sync-device.js'
import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readdirSync, statSync } from 'node:fs'
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig } from '../../src/config/index.js'
import { exportCar } from '../../src/exits/index.js'
import { EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { ok as okContent, runAndKill, writeSomeFiles, type ContentDevice } from '../cli/content-devices.js'
import { device, ok, proofDir } from '../proof/harness.js'
import { exitDevice, freshService, readCar, inProcess } from './exit-devices.js'

/**
 * The embedded service's export reads its store in process, each large block hashed on a thread of
 * its own and read into slots used again: the CAR must be the one the gateway's export writes.
 */
describe.skipIf(EXTERNAL)('export of a store read in process, hashed on a thread of its own', () => {
  it('writes the same CAR, byte for byte, as the same export with every block read into new memory and hashed on this thread, and as with its leaves read a run at a time; the same blocks as the gateway\'s', async () => {
    const root = await useTempDir()
    const one = await freshService(root, 'one')
    const a = await exitDevice(root, one, 'a')
    await writeSomeFiles(a.folder, 'first', { largeBytes: 3 * 1024 * 1024 + 1, small: 20 })
    await okContent(a, ['snapshot'])
    await writeSomeFiles(a.folder, 'second', { largeBytes: 1024 * 1024 + 7, small: 5 })
    await okContent(a, ['snapshot'])
    const config = loadConfig({ configPath: a.config })
    const threaded = join(root, 'threaded.car')
    const stored = await exportCar(repositoryOn(config, inProcess(one, { block: async (cid, into) => await one.local.readStoredBlock(cid, into) })), { file: threaded, content: true })
    expect(stored.contentObjects).toBeGreaterThan(0)
    // A reader that takes no slot: each block in memory of its own, which is never handed to
    // another thread (it is not the walk's), so hashed here: what the export did before.
    const here = join(root, 'here.car')
    await exportCar(repositoryOn(config, inProcess(one, { block: async cid => await one.local.readStoredBlock(cid) })), { file: here, content: true })
    expect((await readFile(threaded)).equals(await readFile(here)), 'the same bytes').toBe(true)
    // Leaves read a run at a time, objects read ahead across each other (the CLI's export).
    const runs = join(root, 'runs.car')
    await exportCar(repositoryOn(config, inProcess(one, { block: async (cid, into) => await one.local.readStoredBlock(cid, into), run: async (cids, into) => await one.local.readStoredBlocks(cids, into) })), { file: runs, content: true })
    expect((await readFile(runs)).equals(await readFile(here)), 'the same bytes, read in runs').toBe(true)
    // Through the gateway the blocks are rebuilt from the files' bytes (a node after its leaves):
    // the same blocks, each as stored.
    const gateway = join(root, 'gateway.car')
    const fetched = await exportCar(repositoryOn(config, one.clients), { file: gateway, content: true })
    expect(stored).toMatchObject({ blocks: fetched.blocks, bytes: fetched.bytes, carBytes: fetched.carBytes })
    const [mine, theirs] = [await readCar(threaded), await readCar(gateway)]
    expect(mine.roots).toEqual(theirs.roots)
    expect(new Map([...mine.blocks].sort())).toEqual(new Map([...theirs.blocks].sort()))
  }, 240_000)

  it('killed (SIGKILL) while its CAR is being written: FILE as it was; run again, a whole CAR and no temp file left', async () => {
    const root = await proofDir()
    const a = await device(root, 'a', { extra: '[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n' })
    await mkdir(join(a.root, 'kept'), { recursive: true })
    await writeFile(join(a.root, 'kept', 'large.bin'), randomBytes(24 * 1024 * 1024))
    await ok(['snapshot', '--config', a.config], { timeoutMs: 120_000 })
    const car = join(root, 'out.car')
    await writeFile(car, 'an earlier CAR')
    // Killed once the temp file holds its first 4 MiB: blocks are being read, hashed and written.
    const writing = (): boolean => readdirSync(root).some(name => name.endsWith('.cidsync-export') && statSync(join(root, name), { throwIfNoEntry: false })?.size !== undefined && (statSync(join(root, name), { throwIfNoEntry: false })?.size ?? 0) >= 4 * 1024 * 1024)
    const cut = await runAndKill({ config: a.config, env: process.env } as unknown as ContentDevice, ['export', '--car', car, '--content'], writing, 0)
    if (cut.killed) expect(await readFile(car, 'utf8'), 'FILE after a killed export').toBe('an earlier CAR')
    else expect(cut.code, cut.stderr).toBe(0)
    await ok(['export', '--car', car, '--content', '--config', a.config], { timeoutMs: 120_000 })
    const read = await readCar(car)
    expect(read.blocks.size).toBeGreaterThan(96)
    expect((await readdir(root)).filter(n => n.includes('cidsync-export')), 'temp files left beside FILE').toEqual([])
  }, 240_000)
})
