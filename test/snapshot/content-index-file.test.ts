import { describe, expect, it } from 'vitest'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import {
  FORMAT_VERSION, ENGINE, MAX_CONTENT_INDEX_RECORDS, openContentIndex, openManifest, readSealedHeader, seal, sealContentIndex, sealManifest
} from '../../src/snapshot/index.js'
import { SnapshotFormatError, SnapshotIntegrityError, SnapshotTooLargeError, SnapshotUnencryptedError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'

const DEVICE = 'aaaaaaaa-0000-4000-8000-000000000000'

describe('content index objects', () => {
  it('open to the records sealed, under a header that names their kind, device and count', async () => {
    const dir = await useTempDir()
    const records = [{ cid: 'x', seq: 1 }, { cid: 'y', seq: 2 }]
    const sealed = await sealContentIndex({ path: join(dir, 'i.sealed'), device: DEVICE, records, stateDir: dir })
    const header = await readSealedHeader(sealed.path)
    expect(header).toMatchObject({ kind: 'content-index', device: DEVICE, records: 2, cipher: 'aes-256-gcm' })
    expect(await openContentIndex({ path: sealed.path, name: 'i', stateDir: dir })).toEqual({ device: DEVICE, records })
  })

  it('sealed from records\' JSON texts, open to those records', async () => {
    const dir = await useTempDir()
    const records = [{ cid: 'x', seq: 1, objects: [['o', 0, 2]] }, { cid: 'y "é"', seq: 2 }]
    const sealed = await sealContentIndex({ path: join(dir, 'i.sealed'), device: DEVICE, recordTexts: records.map(r => JSON.stringify(r)), stateDir: dir })
    expect(await readSealedHeader(sealed.path)).toMatchObject({ records: 2 })
    expect(await openContentIndex({ path: sealed.path, name: 'i', stateDir: dir })).toEqual({ device: DEVICE, records })
  })

  it('are never taken for a manifest, nor a manifest for one', async () => {
    const dir = await useTempDir()
    const index = await sealContentIndex({ path: join(dir, 'i.sealed'), device: DEVICE, records: [], stateDir: dir })
    await expect(openManifest({ path: index.path, name: 'i', stateDir: dir })).rejects.toThrow(SnapshotFormatError)
    const manifest = await sealManifest({
      path: join(dir, 'm.sealed'),
      manifest: { version: 2, createdAt: '2026-11-23T19:00:00.000Z', device: DEVICE, hostname: 'h', previous: null, entries: 0, devices: [], added: [], bytesAdded: 0 },
      encryption: 'aes-256-gcm',
      stateDir: dir
    })
    await expect(openContentIndex({ path: manifest.path, name: 'm', stateDir: dir })).rejects.toThrow(/not a content index object/)
  })

  it('refuse a changed byte, no cipher, a body that is not what the header says, and a body past the bound', async () => {
    const dir = await useTempDir()
    const sealed = await sealContentIndex({ path: join(dir, 'i.sealed'), device: DEVICE, records: [{ cid: 'x', seq: 1 }], stateDir: dir })
    const bytes = await readFile(sealed.path)
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 20) ^ 1, bytes.length - 20)
    await writeFile(join(dir, 'flipped'), bytes)
    await expect(openContentIndex({ path: join(dir, 'flipped'), name: 'flipped', stateDir: dir })).rejects.toThrow(SnapshotIntegrityError)

    const header = { format: FORMAT_VERSION, engine: ENGINE, kind: 'content-index', compression: 'br', device: DEVICE } as const
    const body = (records: unknown[], device = DEVICE): { bytes: Buffer } => ({ bytes: Buffer.from(JSON.stringify({ version: 1, device, records })) })
    await seal({ path: join(dir, 'plain'), header: { ...header, records: 0 }, body: body([]), encryption: 'none', stateDir: dir })
    await expect(openContentIndex({ path: join(dir, 'plain'), name: 'plain', stateDir: dir })).rejects.toThrow(SnapshotUnencryptedError)

    await seal({ path: join(dir, 'count'), header: { ...header, records: 2 }, body: body([{}]), encryption: 'aes-256-gcm', stateDir: dir })
    await expect(openContentIndex({ path: join(dir, 'count'), name: 'count', stateDir: dir })).rejects.toThrow(/says it holds 2 records/)
    await seal({ path: join(dir, 'device'), header: { ...header, records: 0 }, body: body([], 'someone-else'), encryption: 'aes-256-gcm', stateDir: dir })
    await expect(openContentIndex({ path: join(dir, 'device'), name: 'device', stateDir: dir })).rejects.toThrow(SnapshotFormatError)

    // Well compressed, past the bound once inflated: stopped there, never held whole.
    const large = Buffer.from(JSON.stringify({ version: 1, device: DEVICE, records: ['a'.repeat(17 * 1024 * 1024)] }))
    await seal({ path: join(dir, 'large'), header: { ...header, records: 1 }, body: { bytes: large }, encryption: 'aes-256-gcm', stateDir: dir })
    await expect(openContentIndex({ path: join(dir, 'large'), name: 'large', stateDir: dir })).rejects.toThrow(SnapshotTooLargeError)
  })

  it('hold at most the bounded number of records', async () => {
    const dir = await useTempDir()
    const records = Array.from({ length: MAX_CONTENT_INDEX_RECORDS + 1 }, (_, i) => ({ seq: i + 1 }))
    await expect(sealContentIndex({ path: join(dir, 'i.sealed'), device: DEVICE, records, stateDir: dir })).rejects.toThrow(SnapshotFormatError)
    const header = { format: FORMAT_VERSION, engine: ENGINE, kind: 'content-index', compression: 'br', device: DEVICE, records: records.length } as const
    await seal({ path: join(dir, 'many'), header, body: { bytes: Buffer.from(JSON.stringify({ version: 1, device: DEVICE, records })) }, encryption: 'aes-256-gcm', stateDir: dir })
    // A header that counts past the bound is refused before any key or byte of the body is touched.
    await expect(readSealedHeader(join(dir, 'many'))).rejects.toThrow(SnapshotFormatError)
  })
})
