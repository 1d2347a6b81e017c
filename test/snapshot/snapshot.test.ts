import { describe, it, expect } from 'vitest'
import { access, readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { gzipSync } from 'node:zlib'
import { join } from 'node:path'
import { checkIndexFile, openIndex, type Index } from '../../src/index/index.js'
import { exportKey, importKey, readingKey, readSnapshot, readSnapshotHeader, writeSnapshot, writingKey, MAGIC } from '../../src/snapshot/index.js'
import { SnapshotFormatError, SnapshotIntegrityError, SnapshotKeyError, SnapshotTooLargeError, SnapshotUnencryptedError, UsageError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { bound } from '../helpers/wait.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'

function indexWithRows (dir: string): Index {
  const index = openIndex(join(dir, 'index.sqlite'))
  index.entries.registerDevice(A, 'laptop')
  index.entries.registerDevice(B, 'desktop')
  const file = (path: string) => ({ kind: 'upsert' as const, folder: 'notes', path, size: path.length, mtimeMs: 1.5, cid: `cid-${path}`, cidProfile: 'kubo-cidv1' })
  index.entries.apply(A, Array.from({ length: 500 }, (_, i) => file(`a/${i}.md`)))
  index.entries.apply(B, [file('b/one.md'), file('b/two.md')])
  index.entries.apply(B, [{ kind: 'delete', folder: 'notes', path: 'b/two.md' }])
  return index
}

const rows = (index: Index): unknown[] => index.entries.list({ includeDeleted: true }).map(e => ({ ...e }))

async function snapshotOf (dir: string, encryption: 'aes-256-gcm' | 'none' = 'aes-256-gcm', passphrase?: string): Promise<{ path: string, index: Index }> {
  const index = indexWithRows(dir)
  const path = join(dir, 'snapshot.bin')
  await writeSnapshot({ index, stateDir: dir, path, encryption, device: A, passphrase })
  return { path, index }
}

async function restoreError (snapshot: string, stateDir: string, passphrase?: string, acceptUnencrypted = false): Promise<Error> {
  const destination = join(stateDir, 'restored.sqlite')
  const err = await readSnapshot({ check: checkIndexFile, path: snapshot, stateDir, destination, passphrase, acceptUnencrypted }).then(() => undefined, (e: unknown) => e as Error)
  await expect(access(destination)).rejects.toThrow()
  if (err === undefined) throw new Error('expected the snapshot to be refused')
  return err
}

describe('snapshots', () => {
  it('refuse a whole-index snapshot with a row whose path climbs out of its folder', async () => {
    const dir = await useTempDir()
    const index = indexWithRows(dir)
    index.entries.apply(A, [{ kind: 'upsert', folder: 'notes', path: '../../.bashrc', size: 1, mtimeMs: 1, cid: 'cid-x', cidProfile: 'kubo-cidv1' }])
    const path = join(dir, 'snapshot.bin')
    await writeSnapshot({ index, stateDir: dir, path, encryption: 'none', device: A })
    index.close()
    const err = await restoreError(path, dir, undefined, true)
    expect(err).toBeInstanceOf(SnapshotIntegrityError)
    expect(err.message).toContain('not a path inside a folder')
  })

  it('round-trip every device\'s rows, tombstones and sequences included, encrypted', async () => {
    const dir = await useTempDir()
    const { path, index } = await snapshotOf(dir)
    const header = await readSnapshotHeader(path)
    expect(header).toMatchObject({ format: 1, engine: 'cidsync-sqlite/1', compression: 'gzip', cipher: 'aes-256-gcm', device: A, entries: 501 })
    expect((await readFile(path)).includes(Buffer.from('a/1.md'))).toBe(false)
    const destination = join(dir, 'restored.sqlite')
    await readSnapshot({ check: checkIndexFile, path, stateDir: dir, destination })
    const restored = openIndex(destination, { readonly: true })
    expect(rows(restored)).toEqual(rows(index))
    restored.close()
    index.close()
    expect((await stat(join(dir, 'snapshot.key'))).mode & 0o777).toBe(0o600)
  })

  it('round-trip without a cipher only when asked to accept one; refused otherwise (exit 4)', async () => {
    const dir = await useTempDir()
    const { path, index } = await snapshotOf(dir, 'none')
    expect((await readSnapshotHeader(path)).cipher).toBe('none')
    const err = await restoreError(path, await useTempDir())
    expect(err).toBeInstanceOf(SnapshotUnencryptedError)
    expect((err as SnapshotUnencryptedError).exitCode).toBe(4)
    expect(err.message).toContain('--allow-unencrypted')
    await readSnapshot({ check: checkIndexFile, path, stateDir: await useTempDir(), destination: join(dir, 'r.sqlite'), acceptUnencrypted: true })
    index.close()
  })

  it('stop a body that inflates past its bound (a decompression bomb), write nothing and leave no temp file', async () => {
    const dir = await useTempDir()
    const header = Buffer.from(JSON.stringify({ format: 1, engine: 'cidsync-sqlite/1', compression: 'gzip', cipher: 'none', nonce: '', keyId: '', salt: '', createdAt: '2026-01-01T00:00:00.000Z', device: A, entries: 1 }))
    const length = Buffer.alloc(2)
    length.writeUInt16BE(header.byteLength)
    // 256 gzip members of 1 MiB of zeros each: ~260 KB that inflate to 256 MiB (gunzip reads every member).
    const member = gzipSync(Buffer.alloc(1024 * 1024))
    const bomb = join(dir, 'bomb.snap')
    await writeFile(bomb, Buffer.concat([MAGIC, length, header, ...Array.from({ length: 256 }, () => member)]))
    const started = Date.now()
    const err = await restoreError(bomb, dir, undefined, true)
    expect(err).toBeInstanceOf(SnapshotTooLargeError)
    expect((err as SnapshotTooLargeError).exitCode).toBe(4)
    expect(err.message).toMatch(/inflates past 67108864 bytes/)
    // Stopped at the bound (the message names it), not after all 256 MiB: a scaled bound on a loaded machine.
    expect(Date.now() - started).toBeLessThan(bound(10_000))
    expect((await readdir(dir)).sort()).toEqual(['bomb.snap'])
  })

  it('write the snapshot and the restored database private (0600)', async () => {
    const dir = await useTempDir()
    const { path, index } = await snapshotOf(dir)
    index.close()
    expect((await stat(path)).mode & 0o777).toBe(0o600)
    const destination = join(dir, 'restored.sqlite')
    await readSnapshot({ check: checkIndexFile, path, stateDir: dir, destination })
    expect((await stat(destination)).mode & 0o777).toBe(0o600)
  })

  it('refuse a file that is not a snapshot, a newer format and a foreign engine, each saying so (exit 4)', async () => {
    const dir = await useTempDir()
    const notSnapshot = join(dir, 'x.bin')
    await writeFile(notSnapshot, 'SQLite format 3\u0000 and more')
    const err = await restoreError(notSnapshot, dir)
    expect(err).toBeInstanceOf(SnapshotFormatError)
    expect(err.message).toContain('wrong magic')
    expect((err as SnapshotFormatError).exitCode).toBe(4)
    for (const [change, message] of [[{ format: 3 }, 'format version 3'], [{ engine: 'other-db/9' }, 'engine other-db/9']] as const) {
      const base: Record<string, unknown> = { format: 1, engine: 'cidsync-sqlite/1', compression: 'gzip', cipher: 'none' }
      const header = Buffer.from(JSON.stringify({ ...base, ...change }))
      const length = Buffer.alloc(2)
      length.writeUInt16BE(header.byteLength)
      await writeFile(notSnapshot, Buffer.concat([MAGIC, length, header, Buffer.from('body')]))
      expect((await restoreError(notSnapshot, dir)).message).toContain(message)
    }
    // Forged headers (found by an attacker run): each a coded refusal, never a raw error from the cipher.
    const v1 = { format: 1, engine: 'cidsync-sqlite/1', compression: 'gzip', cipher: 'aes-256-gcm', nonce: 'AAAAAAAAAAAAAAAA', keyId: '0123456789abcdef', salt: '', createdAt: '', device: 'x', entries: 1 }
    for (const forged of [null, [], 'text', { ...v1, nonce: '' }, { ...v1, nonce: {} }, { ...v1, keyId: 7 }, { ...v1, entries: -1 }]) {
      const header = Buffer.from(JSON.stringify(forged))
      const length = Buffer.alloc(2)
      length.writeUInt16BE(header.byteLength)
      await writeFile(notSnapshot, Buffer.concat([MAGIC, length, header, Buffer.alloc(64)]))
      const refused = await restoreError(notSnapshot, dir)
      expect(refused, JSON.stringify(forged)).toBeInstanceOf(SnapshotFormatError)
      expect((refused as SnapshotFormatError).exitCode).toBe(4)
    }
  })

  it('refuse another device\'s key, naming both keys and what to do', async () => {
    const dir = await useTempDir()
    const { path, index } = await snapshotOf(dir)
    index.close()
    const other = await useTempDir()
    exportKey(other)
    const err = await restoreError(path, other)
    expect(err).toBeInstanceOf(SnapshotKeyError)
    expect(err.message).toMatch(/encrypted with key [0-9a-f]{16}, this device has key [0-9a-f]{16}: import the right one with `cidsync key import`/)
    expect((await restoreError(path, await useTempDir())).message).toContain('this device has none')
  })

  it('refuse changed bytes, in the body or in the header, and leave nothing behind', async () => {
    const dir = await useTempDir()
    const { path, index } = await snapshotOf(dir)
    index.close()
    const original = await readFile(path)
    const body = Buffer.from(original)
    body[body.byteLength - 40] = (body[body.byteLength - 40] as number) ^ 0x01
    await writeFile(path, body)
    expect(await restoreError(path, dir)).toBeInstanceOf(SnapshotIntegrityError)
    const header = Buffer.from(original.toString('latin1').replace('"entries":501', '"entries":999'), 'latin1')
    await writeFile(path, header)
    expect(await restoreError(path, dir)).toBeInstanceOf(SnapshotIntegrityError)
  })

  it('open on a new device with the same passphrase, and not with another', async () => {
    const dir = await useTempDir()
    const { path, index } = await snapshotOf(dir, 'aes-256-gcm', 'correct horse battery staple')
    index.close()
    const fresh = await useTempDir()
    await readSnapshot({ check: checkIndexFile, path, stateDir: fresh, destination: join(fresh, 'r.sqlite'), passphrase: 'correct horse battery staple' })
    expect((await restoreError(path, await useTempDir(), 'wrong')).message).toContain('wrong passphrase')
    expect((await restoreError(path, await useTempDir())).message).toContain('CIDSYNC_SNAPSHOT_PASSPHRASE')
  })

  it('derive a passphrase\'s key once per salt in a run (a restore opens tens of segments), never handing it to another passphrase', async () => {
    const dir = await useTempDir()
    const salt = { keyId: '', salt: Buffer.from('a salt of sixteen').toString('base64') }
    const key = writingKey(dir, 'first passphrase')
    // The very key derived first, each time (a second scrypt, about 0.1 s each, would make a new
    // buffer): seen without timing it, which a loaded machine blurs.
    for (let i = 0; i < 20; i++) expect(readingKey(dir, { keyId: key.keyId, salt: key.salt }, 'first passphrase')).toBe(key.key)
    expect(() => readingKey(dir, { keyId: key.keyId, salt: key.salt }, 'another passphrase')).toThrow(/wrong passphrase/)
    expect(() => readingKey(dir, { ...salt, keyId: key.keyId }, 'first passphrase')).toThrow(/wrong passphrase/)
  })

  it('open on a new device once the key is carried over with export and import', async () => {
    const dir = await useTempDir()
    const { path, index } = await snapshotOf(dir)
    index.close()
    const fresh = await useTempDir()
    const text = exportKey(dir)
    expect(text).toMatch(/^cidsync-key-1:[A-Za-z0-9_-]{43}$/)
    importKey(fresh, text)
    await readSnapshot({ check: checkIndexFile, path, stateDir: fresh, destination: join(fresh, 'r.sqlite') })
    const third = await useTempDir()
    exportKey(third)
    expect(() => importKey(third, text)).toThrow(UsageError)
    expect(() => importKey(third, text)).toThrow(/--force/)
    importKey(third, text, true)
    expect(() => importKey(third, 'garbage')).toThrow(/not an exported key/)
  })
})
