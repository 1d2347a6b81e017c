import { repositoryOn } from '../helpers/sync-device.js'
import { describe, expect, it } from 'vitest'
import { mkdir, readFile, readdir, stat, symlink, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig } from '../../src/config/index.js'
import { DirectoryStoreError, ExportPointerAheadError, PointerNotFoundError, UsageError } from '../../src/errors.js'
import { exportCar, exportDir, type ExportDirProgress } from '../../src/exits/index.js'
import { DirectoryObjectStore, directoryHome } from '../../src/store/index.js'
import { EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { ok, writeSomeFiles } from '../cli/content-devices.js'
import { exitDevice, FIRST, freshService, historyOf, publishedAt, SECOND } from './exit-devices.js'

/** Every CID the store at `dir` lists. */
async function listed (dir: string): Promise<Set<string>> {
  const store = await DirectoryObjectStore.open(dir)
  const cids = new Set<string>()
  for await (const info of store.list()) cids.add(info.cid)
  return cids
}

describe.skipIf(EXTERNAL)('exportDir: the history into a directory store', () => {
  it('fills a new directory (0700) with the objects a CAR holds, the pointer last; a second export adds only what is new; an older publish never moves the pointer back', async () => {
    const root = await useTempDir()
    const one = await freshService(root, 'one')
    const a = await exitDevice(root, one, 'a')
    await writeSomeFiles(a.folder, 'first', { largeBytes: 1024 * 1024 + 3, small: 12 })
    await ok(a, ['snapshot'], publishedAt(FIRST))
    const config = loadConfig({ configPath: a.config, env: a.env, cwd: root })
    const dir = join(root, 'usb', 'cidsync')
    await mkdir(join(root, 'usb'))

    const events: ExportDirProgress[] = []
    const first = await exportDir(repositoryOn(config, one.clients), { dir, content: true, onProgress: e => { events.push(e.detail) } })
    expect((await stat(dir)).mode & 0o777).toBe(0o700)
    expect(first.contentObjects).toBeGreaterThan(0)
    expect(first).toMatchObject({ dir, written: first.objects, present: 0, bytesWritten: first.bytes, pointer: 'moved', publishes: 1 })
    expect(events.every(e => e.written)).toBe(true)
    // The same objects as a CAR export of the same history, and the same plain root.
    const carObjects = new Set<string>()
    const car = await exportCar(repositoryOn(config, one.clients), { file: join(root, 'same.car'), content: true, onProgress: e => { carObjects.add(e.detail.cid) } })
    expect(await listed(dir)).toEqual(carObjects)
    expect(new Set(events.map(e => e.cid))).toEqual(carObjects)
    expect(first.root).toBe(car.root)
    const [head] = await historyOf(a)
    expect(first.publish).toBe(head?.cid)
    const pointers = directoryHome(dir).pointers
    expect(await pointers.current(config.namespace, config.network)).toMatchObject({ snapshotCid: head?.cid, engine: 'cidsync-sqlite/2' })

    // A second publish: only its new objects are written.
    await writeSomeFiles(a.folder, 'second', { largeBytes: 300 * 1024, small: 4 })
    await ok(a, ['snapshot'], publishedAt(SECOND))
    events.length = 0
    const second = await exportDir(repositoryOn(config, one.clients), { dir, content: true, onProgress: e => { events.push(e.detail) } })
    expect(second.publishes).toBe(2)
    expect(second.present).toBe(first.objects)
    expect(second.written).toBe(second.objects - first.objects)
    expect(second.written).toBeGreaterThan(0)
    expect(events.filter(e => !e.written).length).toBe(first.objects)
    expect(second.bytesWritten).toBeLessThan(second.bytes)
    const [newest] = await historyOf(a)
    expect((await pointers.current(config.namespace, config.network)).snapshotCid).toBe(newest?.cid)

    // Nothing new: nothing written, the pointer named it already.
    const again = await exportDir(repositoryOn(config, one.clients), { dir, content: true })
    expect(again, JSON.stringify(again)).toMatchObject({ written: 0, present: second.objects, pointer: 'already' })

    // A segment cut short on the disk (a copy interrupted by hand) is written again, not trusted by its name.
    const segment = events.find(e => e.kind === 'segment')?.cid ?? ''
    const cut = join(dir, 'objects', segment.slice(-2), segment)
    await truncate(cut, 10)
    const mended = await exportDir(repositoryOn(config, one.clients), { dir, content: true })
    expect(mended).toMatchObject({ written: 1, present: second.objects - 1, pointer: 'already' })
    expect((await stat(cut)).size).toBeGreaterThan(10)

    // The first publish's history is all there, but the pointer names a later one: left as it is.
    // Its own recorded time: the test clock runs on from FIRST, so the stamp may be a little after it.
    const older = exportDir(repositoryOn(config, one.clients), { dir, at: new Date(head?.at ?? FIRST) })
    await expect(older).rejects.toThrow(ExportPointerAheadError)
    await expect(older).rejects.toThrow(`the directory's pointer names ${newest?.cid ?? '?'}, which is not in the history of ${head?.cid ?? '?'}`)
    expect((await pointers.current(config.namespace, config.network)).snapshotCid).toBe(newest?.cid)
  }, 300_000)

  it('refuses a directory that holds other files, or a file, and writes nothing there; an empty one is made a store', async () => {
    const root = await useTempDir()
    await writeFile(join(root, 'c.toml'), 'state_dir = "state"\n')
    const config = loadConfig({ configPath: join(root, 'c.toml'), env: {} })
    // Never reached: the directory is refused first. A real home all the same (an empty store).
    const clients = directoryHome(join(root, 'nowhere'), { create: true })
    const photos = join(root, 'photos')
    await mkdir(photos)
    await writeFile(join(photos, 'cat.jpg'), 'not a store')
    const refused = exportDir(repositoryOn(config, clients), { dir: photos })
    await expect(refused).rejects.toThrow(DirectoryStoreError)
    await expect(refused).rejects.toThrow(`${photos} holds files and is not a cidsync directory store (no cidsync-store.json): nothing was written there`)
    expect(await readdir(photos)).toEqual(['cat.jpg'])
    const file = join(root, 'a-file')
    await writeFile(file, 'x')
    await expect(exportDir(repositoryOn(config, clients), { dir: file })).rejects.toThrow(DirectoryStoreError)

    // An empty directory becomes a store; the empty home's missing pointer then ends the export.
    const empty = join(root, 'empty')
    await mkdir(empty)
    await expect(exportDir(repositoryOn(config, clients), { dir: empty })).rejects.toThrow(PointerNotFoundError)
    expect((await readdir(empty)).sort()).toEqual(['cidsync-store.json', 'objects', 'tmp'])
  })

  it('refuses a directory a [[mirrors]] table names, by any path to it: its pointer has one writer, the daemon', async () => {
    const root = await useTempDir()
    await writeFile(join(root, 'c.toml'), 'state_dir = "state"\n\n[[mirrors]]\nname = "usb"\npath = "usb/cidsync"\n')
    const config = loadConfig({ configPath: join(root, 'c.toml'), env: {} })
    const mirror = join(root, 'usb', 'cidsync')
    // As `login --mirror` makes it.
    await mkdir(join(root, 'usb'))
    await DirectoryObjectStore.open(mirror, { create: true })
    const before = (await readdir(mirror)).sort()
    await symlink(join(root, 'usb'), join(root, 'usb-link'))
    const clients = directoryHome(join(root, 'nowhere'), { create: true })
    for (const dir of [mirror, join(root, 'usb-link', 'cidsync'), `${mirror}/`]) {
      const refused = exportDir(repositoryOn(config, clients), { dir })
      await expect(refused).rejects.toThrow(UsageError)
      await expect(refused).rejects.toThrow('is the directory of mirror usb')
    }
    expect((await readdir(mirror)).sort()).toEqual(before)
  })
  it('a file of the right size but wrong bytes (bit rot, a hand or another user) is written again, not counted as there', async () => {
    const root = await useTempDir()
    const one = await freshService(root, 'one')
    const a = await exitDevice(root, one, 'a')
    await writeSomeFiles(a.folder, 'first', { largeBytes: 300 * 1024, small: 4 })
    await ok(a, ['snapshot'])
    const config = loadConfig({ configPath: a.config, env: a.env, cwd: root })
    const dir = join(root, 'usb')
    const events: ExportDirProgress[] = []
    const first = await exportDir(repositoryOn(config, one.clients), { dir, content: true, onProgress: e => { events.push(e.detail) } })
    const segment = events.find(e => e.kind === 'segment')?.cid ?? ''
    const path = join(dir, 'objects', segment.slice(-2), segment)
    const bytes = await readFile(path)
    bytes[bytes.byteLength - 1] = (bytes[bytes.byteLength - 1] ?? 0) ^ 0xff
    await writeFile(path, bytes)
    const again = await exportDir(repositoryOn(config, one.clients), { dir, content: true })
    expect(again).toMatchObject({ written: 1, present: first.objects - 1, pointer: 'already' })
    // What is there now is the object again, byte for byte.
    bytes[bytes.byteLength - 1] = (bytes[bytes.byteLength - 1] ?? 0) ^ 0xff
    expect((await readFile(path)).equals(bytes)).toBe(true)
  }, 300_000)
})
