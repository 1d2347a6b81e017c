import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { open, readFile, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { SnapshotFormatError, SnapshotIntegrityError, SnapshotTooLargeError, SnapshotUnencryptedError } from '../../src/errors.js'
import { sealSegment, unsealSegment } from '../../src/snapshot/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const RANGE = { deviceId: 'a'.repeat(32), kind: 'delta' as const, from: 0, to: 9 }

/** The bytes in chunks of the given sizes, cycled (1 byte at a time splits the header and the tag everywhere). */
function chunked (bytes: Buffer, sizes: readonly number[]): Readable {
  const chunks: Buffer[] = []
  for (let at = 0, i = 0; at < bytes.byteLength; i++) {
    const size = sizes[i % sizes.length] as number
    chunks.push(bytes.subarray(at, at + size))
    at += size
  }
  return Readable.from(chunks, { objectMode: false })
}

async function sealed (dir: string, encryption: 'aes-256-gcm' | 'none', body = randomBytes(60_000)): Promise<{ body: Buffer, bytes: Buffer }> {
  const database = join(dir, 'body.bin')
  await writeFile(database, body)
  const { path } = await sealSegment({ database, path: join(dir, 'seg.sealed'), range: RANGE, entries: 9, encryption, stateDir: dir })
  return { body, bytes: await readFile(path) }
}

describe('a segment unsealed as its bytes arrive (a restore inflates while it fetches)', () => {
  it('makes the same database as the sealed body, however the bytes are cut', async () => {
    const dir = await useTempDir()
    const { body, bytes } = await sealed(dir, 'aes-256-gcm')
    for (const sizes of [[bytes.byteLength], [1], [7, 16, 3], [65_536], [bytes.byteLength - 10, 10]]) {
      const destination = join(dir, `out-${sizes.join('-')}.sqlite`)
      await unsealSegment({ source: chunked(bytes, sizes), bytes: bytes.byteLength, destination, name: 'x', stateDir: dir, expected: { ...RANGE, entries: 9 } })
      expect((await readFile(destination)).equals(body), String(sizes)).toBe(true)
    }
  })

  it('refuses changed, cut, foreign, unencrypted and oversized bytes, and leaves nothing behind', async () => {
    const dir = await useTempDir()
    const { bytes } = await sealed(dir, 'aes-256-gcm')
    const attempt = async (source: Buffer, init: { expected?: typeof RANGE & { entries: number }, bytes?: number, acceptUnencrypted?: boolean } = {}): Promise<unknown> => {
      const err = await unsealSegment({ source: chunked(source, [4096]), bytes: init.bytes ?? source.byteLength, destination: join(dir, 'out.sqlite'), name: 'x', stateDir: dir, acceptUnencrypted: init.acceptUnencrypted, expected: init.expected ?? { ...RANGE, entries: 9 } }).then(() => undefined, (e: unknown) => e)
      expect((await readdir(dir)).filter(name => name.startsWith('out'))).toEqual([])
      return err
    }
    // A byte of the body, of the middle, of the tag: the tag does not verify.
    for (const at of [1000, bytes.byteLength >> 1, bytes.byteLength - 1]) {
      const changed = Buffer.from(bytes)
      changed[at] = (changed[at] as number) ^ 1
      expect(await attempt(changed), `byte ${at}`).toBeInstanceOf(SnapshotIntegrityError)
    }
    expect(await attempt(bytes.subarray(0, bytes.byteLength - 5))).toBeInstanceOf(SnapshotIntegrityError)
    expect(await attempt(bytes.subarray(0, 30))).toBeInstanceOf(SnapshotFormatError)
    expect(await attempt(randomBytes(5000))).toBeInstanceOf(SnapshotFormatError)
    expect(await attempt(bytes, { expected: { ...RANGE, to: 10, entries: 9 } })).toBeInstanceOf(SnapshotFormatError)
    const plain = await sealed(await useTempDir(), 'none')
    expect(await attempt(plain.bytes)).toBeInstanceOf(SnapshotUnencryptedError)
    await expect(unsealSegment({ source: chunked(plain.bytes, [999]), bytes: plain.bytes.byteLength, destination: join(dir, 'plain.sqlite'), name: 'x', stateDir: dir, acceptUnencrypted: true, expected: { ...RANGE, entries: 9 } })).resolves.toBeUndefined()
  })

  it('stops a body that inflates past what its size allows', async () => {
    const dir = await useTempDir()
    const database = join(dir, 'bomb.sqlite')
    const handle = await open(database, 'w')
    await handle.truncate(64 * 1024 * 1024)
    await handle.close()
    const range = { ...RANGE, to: 400_000 }
    const { path } = await sealSegment({ database, path: join(dir, 'bomb.seg'), range, entries: 400_000, encryption: 'none', stateDir: dir })
    const bytes = await readFile(path)
    const err = await unsealSegment({ source: chunked(bytes, [512]), bytes: bytes.byteLength, destination: join(dir, 'out.sqlite'), name: 'x', stateDir: dir, acceptUnencrypted: true, expected: { ...range, entries: 400_000 } }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(SnapshotTooLargeError)
    expect((await readdir(dir)).sort()).toEqual(['bomb.seg', 'bomb.sqlite'])
  })
})
