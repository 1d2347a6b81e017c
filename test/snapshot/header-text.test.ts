import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { MAGIC, parseManifest, readSnapshotHeader } from '../../src/snapshot/index.js'
import { SnapshotFormatError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'

/**
 * An unencrypted `/1` snapshot's header is no one's word (no cipher authenticates it), yet its
 * time and device are printed by `restore` and `import`: terminal escapes there would reach the
 * user's terminal.
 */
describe('snapshot headers: text shown to the user', () => {
  it('refuses a /1 header whose time is not a time or whose device holds control characters', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'forged.snapshot')
    const base = { format: 1, engine: 'cidsync-sqlite/1', compression: 'gzip', cipher: 'none', nonce: '', keyId: '', salt: '', createdAt: '2026-01-01T00:00:00.000Z', device: 'abc', entries: 1 }
    for (const forged of [{ ...base, createdAt: '\u001b]0;owned\u0007\u001b[2J' }, { ...base, device: 'dev\u001b[31m' }]) {
      const header = Buffer.from(JSON.stringify(forged))
      const length = Buffer.alloc(2)
      length.writeUInt16BE(header.byteLength)
      await writeFile(path, Buffer.concat([MAGIC, length, header, Buffer.alloc(64)]))
      await expect(readSnapshotHeader(path), JSON.stringify(forged)).rejects.toBeInstanceOf(SnapshotFormatError)
    }
    // The genuine shape still reads.
    const header = Buffer.from(JSON.stringify(base))
    const length = Buffer.alloc(2)
    length.writeUInt16BE(header.byteLength)
    await writeFile(path, Buffer.concat([MAGIC, length, header, Buffer.alloc(64)]))
    expect((await readSnapshotHeader(path)).createdAt).toBe(base.createdAt)
  })

  it('refuses a manifest whose device holds control characters', () => {
    const manifest = { version: 2, createdAt: '2026-01-01T00:00:00.000Z', device: 'dev\u001b[2J', hostname: 'h', previous: null, entries: 0, devices: [], added: [], bytesAdded: 0 }
    expect(() => parseManifest(JSON.stringify(manifest), 'm')).toThrow()
    expect(() => parseManifest(JSON.stringify({ ...manifest, device: 'dev' }), 'm')).not.toThrow()
  })
})
