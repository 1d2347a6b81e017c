import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, readdir, stat, utimes, writeFile, appendFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { ContentStorer, ObjectCache, fetchFile, parseContentRecord, CHUNK_BYTES, PART_CHUNKS, type ContentRecord, type ContentStorerProgress, type FileToStore } from '../../src/custody/index.js'
import { cidProfile, fileCid } from '../../src/content/index.js'
import { ContentIntegrityError, TargetPathError } from '../../src/errors.js'
import { keyIdOf } from '../../src/snapshot/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { serviceUnderTest, type ServiceUnderTest } from '../helpers/service.js'

const profile = cidProfile('kubo-cidv1')
const objectProfile = cidProfile('kubo-cidv1')

interface Harness {
  readonly service: ServiceUnderTest
  readonly key: Buffer
  readonly uploads: { count: number }
  readonly records: Map<string, ContentRecord>
  storer: (init?: { storedParts?: Map<number, string>, onPart?: (i: number, o: string) => void, onProgress?: (event: ContentStorerProgress) => void }) => ContentStorer
}

async function harness (dir: string): Promise<Harness> {
  const service = await serviceUnderTest()
  const key = randomBytes(32)
  const uploads = { count: 0 }
  const records = new Map<string, ContentRecord>()
  return {
    service, key, uploads, records,
    storer: (init = {}) => new ContentStorer({
      storeObject: async (path, options) => { uploads.count++; return (await service.clients.objects.put(path, objectProfile, options)).cid },
      storePlain: async (path, p, options) => { uploads.count++; return (await service.clients.objects.put(path, p, options)).cid }
    }, {
      sealing: 'aes-256-gcm/1',
      key: { key, keyId: keyIdOf(key), salt: '' },
      spoolDir: join(dir, 'spool'),
      onStored: (made) => { for (const r of made) records.set(r.cid, parseContentRecord(JSON.parse(JSON.stringify(r)))) },
      storedParts: () => init.storedParts ?? new Map(),
      onPartStored: (_f, i, o) => init.onPart?.(i, o),
      onProgress: init.onProgress
    })
  }
}

async function fileToStore (path: string): Promise<FileToStore> {
  const { cid, size } = await fileCid(path, profile)
  return { path, cid, size, profile }
}

function objects (service: ServiceUnderTest): (dir: string) => ObjectCache {
  return (dir) => new ObjectCache(dir, async (cid, destination, options) => { await service.clients.objects.getFile(cid, objectProfile, destination, options) })
}

describe('content storing and fetching, against the local service', () => {
  it('stores many small files in few uploads and large ones in parts, and brings every byte and mtime back', async () => {
    const dir = await useTempDir()
    const h = await harness(dir)
    const source = join(dir, 'source')
    await mkdir(source)
    const names: string[] = []
    for (let i = 0; i < 300; i++) {
      const name = `small-${i}`
      await writeFile(join(source, name), randomBytes(i === 0 ? 0 : 1 + (i * 997) % 60_000))
      names.push(name)
    }
    await writeFile(join(source, 'large'), randomBytes(PART_CHUNKS * CHUNK_BYTES + CHUNK_BYTES + 7))
    await writeFile(join(source, 'medium'), randomBytes(CHUNK_BYTES + 1))
    names.push('large', 'medium')
    await utimes(join(source, 'medium'), new Date(), new Date('2020-01-02T03:04:05Z'))
    const told: ContentStorerProgress[] = []
    const storer = h.storer({ onProgress: (event) => { told.push(event) } })
    const files = await Promise.all(names.map(async n => await fileToStore(join(source, n))))
    for (const file of files) await storer.add(file)
    await storer.flush()
    // Every file and every plaintext byte told once, as custody:stored.
    expect(told.every(e => e.type === 'custody:stored')).toBe(true)
    expect(told.reduce((sum, e) => sum + e.detail.files, 0)).toBe(302)
    expect(told.reduce((sum, e) => sum + e.detail.bytes, 0)).toBe(files.reduce((sum, f) => sum + f.size, 0))
    // 300 small files in one pack; the large file in 2 parts; the medium file in 1.
    expect(h.uploads.count).toBe(4)
    expect(h.records.size).toBe(302)
    expect(h.records.get(files.at(-2)?.cid.toString() ?? '')?.objects).toHaveLength(2)
    // The uploads listing says what each upload is, and names none of the files sealed in it.
    const listed: string[] = []
    for await (const record of h.service.clients.files()) listed.push(record.fileName)
    expect(listed.toSorted()).toEqual(['cidsync-pack.sealed', 'cidsync-part-1.sealed', 'cidsync-part-1.sealed', 'cidsync-part-2.sealed'])

    const target = join(dir, 'target')
    await mkdir(target)
    const cache = objects(h.service)(join(dir, 'objects'))
    for (const file of files) {
      const { mtimeMs } = await stat(file.path)
      await fetchFile({ record: h.records.get(file.cid.toString()) as ContentRecord, row: { cid: file.cid, size: file.size, mtimeMs, profile }, target: join(target, file.path.split('/').at(-1) as string), snapshotKey: h.key, objects: cache })
    }
    for (const name of names) {
      expect((await readFile(join(target, name))).equals(await readFile(join(source, name)))).toBe(true)
      expect(Math.abs((await stat(join(target, name))).mtimeMs - (await stat(join(source, name))).mtimeMs)).toBeLessThan(1)
    }
    expect((await readdir(target)).filter(n => n.endsWith('.part'))).toEqual([])
  })

  it('resumes a large file after a kill, sending only the parts not yet stored', async () => {
    const dir = await useTempDir()
    const h = await harness(dir)
    const path = join(dir, 'big')
    await writeFile(path, randomBytes(2 * PART_CHUNKS * CHUNK_BYTES + 100))
    const file = await fileToStore(path)
    const parts = new Map<number, string>()
    // A first run killed after its first part: only that part is known.
    const first = h.storer({ onPart: (i, o) => { parts.set(i, o); if (i === 0) throw new Error('killed') } })
    await expect(first.add(file)).rejects.toThrow('killed')
    expect(h.uploads.count).toBe(1)
    const second = h.storer({ storedParts: parts })
    await second.add(file)
    // Parts 1 and 2 only: the first is not sent again.
    expect(h.uploads.count).toBe(3)
    expect(h.records.get(file.cid.toString())?.objects.map(o => o[0])[0]).toBe(parts.get(0))
  })

  it('records nothing for a file that changed since its row, and refuses forged records and flipped objects, writing nothing', async () => {
    const dir = await useTempDir()
    const h = await harness(dir)
    const a = join(dir, 'a')
    const b = join(dir, 'b')
    await writeFile(a, randomBytes(5000))
    await writeFile(b, randomBytes(6000))
    const fileA = await fileToStore(a)
    const fileB = await fileToStore(b)
    const changed = join(dir, 'changed')
    await writeFile(changed, randomBytes(4000))
    const fileChanged = await fileToStore(changed)
    await appendFile(changed, 'x')
    const storer = h.storer()
    await expect(storer.add(fileChanged)).rejects.toMatchObject({ code: 'ERR_FILE_CHANGED' })
    await storer.add(fileA)
    await storer.add(fileB)
    await storer.flush()
    expect(h.records.has(fileChanged.cid.toString())).toBe(false)

    const target = join(dir, 'target')
    await mkdir(target)
    const cache = objects(h.service)(join(dir, 'objects'))
    const recordB = h.records.get(fileB.cid.toString()) as ContentRecord
    // A's row with B's place in the pack: opens under no key derived for A.
    const forged = { ...recordB, cid: fileA.cid.toString(), size: fileA.size }
    await expect(fetchFile({ record: forged, row: { cid: fileA.cid, size: fileA.size, mtimeMs: 0, profile }, target: join(target, 'a'), snapshotKey: h.key, objects: cache })).rejects.toThrow(ContentIntegrityError)
    // Plain content passed off under a sealed row's CID is refused by the CID check.
    expect(() => parseContentRecord({ ...recordB, objects: [['../../etc/passwd', 0, 10]] })).toThrow(/not a CID/)
    expect(() => parseContentRecord({ ...recordB, objects: [[recordB.objects[0]?.[0], 0, 1]] })).toThrow(/spans/)
    // Its span moved past the pack's end: reads short, refused, nothing written.
    const [pack, , length] = recordB.objects[0] as readonly [string, number, number]
    const pastEnd = parseContentRecord({ ...recordB, objects: [[pack, 1_000_000_000, length]] })
    await expect(fetchFile({ record: pastEnd, row: { cid: fileB.cid, size: fileB.size, mtimeMs: 0, profile }, target: join(target, 'b'), snapshotKey: h.key, objects: cache })).rejects.toThrow(ContentIntegrityError)
    expect(await readdir(target)).toEqual([])
    // The same record, right: comes back.
    await fetchFile({ record: recordB, row: { cid: fileB.cid, size: fileB.size, mtimeMs: 0, profile }, target: join(target, 'b'), snapshotKey: h.key, objects: cache })
    expect((await readFile(join(target, 'b'))).equals(await readFile(b))).toBe(true)
    expect(CID.parse(recordB.objects[0]?.[0] as string).version).toBe(1)
  })

  it('writes nothing through a directory swapped for a symlink while the file was fetched', async () => {
    const dir = await useTempDir()
    const h = await harness(dir)
    const source = join(dir, 'source')
    await writeFile(source, randomBytes(3 * CHUNK_BYTES + 5))
    const file = await fileToStore(source)
    const storer = h.storer()
    await storer.add(file)
    await storer.flush()
    const target = join(dir, 'target')
    const sub = join(target, 'sub')
    const elsewhere = join(dir, 'elsewhere')
    await mkdir(sub, { recursive: true })
    await mkdir(elsewhere)
    const { readdirSync, realpathSync, renameSync, symlinkSync } = await import('node:fs')
    const targetDir = realpathSync(sub)
    let swapped = false
    // As if the swap came right after the directory was checked: the temp file and every path
    // through `sub` now lie in `elsewhere`.
    const swap = (): void => {
      renameSync(sub, `${sub}.moved`)
      symlinkSync(elsewhere, sub)
      for (const name of readdirSync(`${sub}.moved`)) renameSync(join(`${sub}.moved`, name), join(elsewhere, name))
    }
    const fetching = fetchFile({
      record: h.records.get(file.cid.toString()) as ContentRecord,
      row: { cid: file.cid, size: file.size, mtimeMs: 0, profile },
      target: join(sub, 'file'),
      targetDir,
      snapshotKey: h.key,
      objects: objects(h.service)(join(dir, 'objects')),
      onBytes: () => { if (!swapped) { swapped = true; swap() } }
    })
    await expect(fetching).rejects.toThrow(TargetPathError)
    expect(swapped).toBe(true)
    expect(await readdir(elsewhere)).toEqual([])
  })

  it('fsyncs the file it brings back, unless told it is scratch (verify --content removes it at once)', async () => {
    const dir = await useTempDir()
    const h = await harness(dir)
    const source = join(dir, 'source')
    await writeFile(source, randomBytes(5000))
    const file = await fileToStore(source)
    const storer = h.storer()
    await storer.add(file)
    await storer.flush()
    const record = h.records.get(file.cid.toString()) as ContentRecord
    const cache = objects(h.service)(join(dir, 'objects'))
    const row = { cid: file.cid, size: file.size, mtimeMs: 0, profile }
    // Every FileHandle's sync, node's own: counted, not replaced.
    const probe = await open(source, 'r')
    const handles = Object.getPrototypeOf(probe) as { sync: () => Promise<void> }
    await probe.close()
    const sync = vi.spyOn(handles, 'sync')
    onTestFinished(() => { sync.mockRestore() })
    await fetchFile({ record, row, target: join(dir, 'kept'), snapshotKey: h.key, objects: cache })
    expect(sync).toHaveBeenCalled()
    sync.mockClear()
    await fetchFile({ record, row, target: join(dir, 'scratch'), snapshotKey: h.key, objects: cache, durable: false })
    expect(sync).not.toHaveBeenCalled()
    expect((await readFile(join(dir, 'scratch'))).equals(await readFile(source))).toBe(true)
  })
})
