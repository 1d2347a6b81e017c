import { describe, expect, it } from 'vitest'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import {
  ENGINE, FORMAT_VERSION, MAX_PRUNE_LIST_OBJECTS, openContentIndex, openPruneList, readSealedHeader, seal, sealContentIndex, sealPruneList
} from '../../src/snapshot/index.js'
import { SnapshotFormatError, SnapshotIntegrityError, SnapshotKeyError, SnapshotUnencryptedError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'

const OBJECTS = ['bafybeigmix7t42i6jacydtquhet7srwvgpizfg7gjbq7627d35mjomtu64', 'bafkreiacndfy443ter6qr2tmbbdhadvxxheowwf75s6zehscklu6ezxmta']

describe('prune lists', () => {
  it('open to the objects sealed, under a header that names their kind, device and count', async () => {
    const dir = await useTempDir()
    const sealed = await sealPruneList({ path: join(dir, 'l.sealed'), device: 'laptop', objects: OBJECTS, stateDir: dir })
    expect(await readSealedHeader(sealed.path)).toMatchObject({ kind: 'prune-list', device: 'laptop', objects: 2, cipher: 'aes-256-gcm' })
    expect(await openPruneList({ path: sealed.path, name: 'l', stateDir: dir })).toEqual({ device: 'laptop', objects: OBJECTS })
  })

  it('are never taken for a content index object, nor one for a list', async () => {
    const dir = await useTempDir()
    const list = await sealPruneList({ path: join(dir, 'l.sealed'), device: 'laptop', objects: [], stateDir: dir })
    await expect(openContentIndex({ path: list.path, name: 'l', stateDir: dir })).rejects.toThrow(/not a content index object/)
    const index = await sealContentIndex({ path: join(dir, 'i.sealed'), device: 'laptop', records: [], stateDir: dir })
    await expect(openPruneList({ path: index.path, name: 'i', stateDir: dir })).rejects.toThrow(/not a prune list/)
  })

  it('refuse a changed byte, another key, no cipher, a body unlike its header, and names that are not CIDs', async () => {
    const dir = await useTempDir()
    const sealed = await sealPruneList({ path: join(dir, 'l.sealed'), device: 'laptop', objects: OBJECTS, stateDir: dir })
    const bytes = await readFile(sealed.path)
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 20) ^ 1, bytes.length - 20)
    await writeFile(join(dir, 'flipped'), bytes)
    await expect(openPruneList({ path: join(dir, 'flipped'), name: 'flipped', stateDir: dir })).rejects.toThrow(SnapshotIntegrityError)
    // Another state dir has another key: its list is no list of this repository's.
    await expect(openPruneList({ path: sealed.path, name: 'l', stateDir: await useTempDir() })).rejects.toThrow(SnapshotKeyError)

    const header = { format: FORMAT_VERSION, engine: ENGINE, kind: 'prune-list', compression: 'br', device: 'laptop' } as const
    const body = (objects: unknown[], device = 'laptop'): { bytes: Buffer } => ({ bytes: Buffer.from(JSON.stringify({ version: 1, device, objects })) })
    await seal({ path: join(dir, 'plain'), header: { ...header, objects: 0 }, body: body([]), encryption: 'none', stateDir: dir })
    await expect(openPruneList({ path: join(dir, 'plain'), name: 'plain', stateDir: dir })).rejects.toThrow(SnapshotUnencryptedError)
    await seal({ path: join(dir, 'count'), header: { ...header, objects: 3 }, body: body(OBJECTS), encryption: 'aes-256-gcm', stateDir: dir })
    await expect(openPruneList({ path: join(dir, 'count'), name: 'count', stateDir: dir })).rejects.toThrow(/says it names 3 objects/)
    await seal({ path: join(dir, 'names'), header: { ...header, objects: 1 }, body: body(['../../etc/passwd']), encryption: 'aes-256-gcm', stateDir: dir })
    await expect(openPruneList({ path: join(dir, 'names'), name: 'names', stateDir: dir })).rejects.toThrow(SnapshotFormatError)
  })

  it('name at most the bounded number of objects', async () => {
    const dir = await useTempDir()
    await expect(sealPruneList({ path: join(dir, 'l.sealed'), device: 'laptop', objects: new Array<string>(MAX_PRUNE_LIST_OBJECTS + 1).fill(OBJECTS[0] as string), stateDir: dir }))
      .rejects.toThrow(SnapshotFormatError)
  })
})
