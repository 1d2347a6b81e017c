import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { indexPath, openIndex, readDeviceId } from '../../src/index/index.js'
import { SNAPSHOT_PROFILE } from '../../src/sync/read/index.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey } from './content-devices.js'

type Placed = Array<[string, number, number]>

/** Between the publish holding the old records and the one holding the new. */
const FIRST_AT = '2026-03-01T01:30:00.000Z'

describe.skipIf(EXTERNAL)('a past publish whose pack is gone, its blobs stored again elsewhere', () => {
  it('get --at and restore --files take the newer record of the same content: this device\'s, then the newest publish\'s; content gone everywhere still fails', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await contentDevice(root, service, 'a')
    const small = new Map(Array.from({ length: 3 }, (_, i) => [`sub/s${i}.bin`, randomBytes(20_000 + i * 1000)] as [string, Buffer]))
    await mkdir(join(a.folder, 'sub'))
    for (const [path, bytes] of small) await writeFile(join(a.folder, path), bytes)
    // A file of its own parts, whose objects the test deletes and stores nowhere else.
    await writeFile(join(a.folder, 'big.bin'), randomBytes(1_500_000))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' })

    // The repack, done by hand: the pack's blobs in another order make another object, Y, and
    // this device records each file again there, newer.
    const device = readDeviceId(a.state) as string
    const index = openIndex(indexPath(a.state))
    const rows = index.entries.list({ deviceId: device }).filter(r => r.cid !== null)
    const record = (path: string): ReturnType<typeof index.content.lookup>[number] => {
      const cid = rows.find(r => r.path === path)?.cid as string
      const [found] = index.content.lookup(cid)
      if (found === undefined) throw new Error(`${path} has no record`)
      return found
    }
    const olds = [...small.keys()].map(record)
    const packs = new Set(olds.map(r => (JSON.parse(r.objects) as Placed)[0]?.[0]))
    expect(packs.size).toBe(1)
    const x = [...packs][0] as string
    const bigObjects = (JSON.parse(record('big.bin').objects) as Placed).map(o => o[0])
    expect(bigObjects).not.toContain(x)
    await service.clients.objects.getFile(x, SNAPSHOT_PROFILE, join(root, 'x.pack'))
    const packed = await readFile(join(root, 'x.pack'))
    const blobs = [...olds].reverse().map((r) => {
      const [[, offset, length]] = JSON.parse(r.objects) as Placed as [[string, number, number]]
      return { record: r, bytes: packed.subarray(offset, offset + length) }
    })
    await writeFile(join(root, 'y.pack'), Buffer.concat(blobs.map(b => b.bytes)))
    const y = (await service.clients.objects.put(join(root, 'y.pack'), SNAPSHOT_PROFILE, { name: 'cidsync-pack.sealed' })).cid
    expect(y).not.toBe(x)
    let offset = 0
    const moved = blobs.map(({ record: r, bytes }) => {
      const objects = JSON.stringify([[y, offset, bytes.length]])
      offset += bytes.length
      return { cid: r.cid, size: r.size, sealing: r.sealing, keyId: r.keyId, keySalt: r.keySalt, objects }
    })
    index.content.record(device, 'a', moved, Math.max(...olds.map(r => r.storedAt)) + 60_000)
    index.close()
    // Deleted since: the newest publish's plain root no longer holds its parts on the service.
    await rm(join(a.folder, 'big.bin'))
    const published = await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' })

    // What a later prune would delete, made unreadable at once. The publishes' plain roots link
    // content objects, and a root holds its blocks on the service: they go too (uploaded under their CID).
    const roots: string[] = []
    for await (const upload of service.clients.files()) if (upload.fileName === upload.cid) roots.push(upload.cid)
    expect(roots.length, published.stderr).toBe(2)
    const deleted = await service.clients.objects.deleteMany([x, ...bigObjects, ...roots])
    expect(deleted.removed.length).toBe(1 + bigObjects.length + roots.length)
    await service.local.reclaim()
    expect(await service.clients.objects.has(x)).toBe(false)
    for (const gone of [x, ...bigObjects]) await expect(service.clients.objects.getFile(gone, SNAPSHOT_PROFILE, join(root, 'gone.object'))).rejects.toMatchObject({ code: 'ERR_CONTENT_NOT_FOUND' })

    const smallPaths = [...small.keys()].map(p => `notes/${p}`)
    const same = async (dir: string): Promise<void> => {
      for (const [path, bytes] of small) expect((await readFile(join(dir, 'notes', path))).equals(bytes), path).toBe(true)
    }
    // This device's index holds the newer records.
    const got = await a.run(['get', ...smallPaths, '--at', FIRST_AT, '--to', join(root, 'got')])
    expect(got.code, got.stderr).toBe(0)
    expect(got.stdout).toContain('3 files written')
    await same(join(root, 'got'))

    // A device whose index is the older publish's: the pointer's newest publish holds them.
    const b = await contentDevice(root, service, 'b')
    await shareKey(a, b)
    await ok(b, ['restore', '--at', FIRST_AT])
    const files = await b.run(['restore', '--files', 'notes/sub', '--to', join(root, 'files')])
    expect(files.code, files.stderr).toBe(0)
    expect(files.stdout).toContain('3 files written')
    await same(join(root, 'files'))
    // A window of one row at a time: each retried file is its own window, and still found.
    const oneByOne = await b.run(['restore', '--files', 'notes/sub', '--to', join(root, 'files-1')], { CIDSYNC_TEST_RESTORE_WINDOW: '1' })
    expect(oneByOne.code, oneByOne.stderr).toBe(0)
    expect(oneByOne.stdout).toContain('3 files written')
    await same(join(root, 'files-1'))

    // Content no record holds anywhere else still fails, named; the others come back beside it.
    const all = await b.run(['get', ...smallPaths, 'notes/big.bin', '--to', join(root, 'all'), '--json'])
    expect(all.code, all.stderr + all.stdout).toBe(1)
    const lines = all.stdout.trim().split('\n').map(l => JSON.parse(l) as { type: string, path?: string, outcome?: string, code?: string })
    const outcomes = lines.filter(l => l.type === 'file').map(l => [l.path, l.outcome, l.code]).sort()
    expect(lines.filter(l => l.type === 'start')).toHaveLength(1)
    expect(outcomes).toEqual([['notes/big.bin', 'failed', 'ERR_CONTENT_NOT_FOUND'], ...smallPaths.map(p => [p, 'written', undefined])].sort())
    await same(join(root, 'all'))
    const gone = await a.run(['get', 'notes/big.bin', '--at', FIRST_AT, '--to', join(root, 'gone')])
    expect(gone.code, gone.stderr).toBe(1)
    expect(gone.stderr).toContain('[ERR_CONTENT_NOT_FOUND]')
  }, 300_000)
})
