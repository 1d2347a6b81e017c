import { describe, it, expect } from 'vitest'
import { open, readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { SnapshotTooLargeError } from '../../src/errors.js'
import { openSegment, sealSegment } from '../../src/snapshot/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { checkSegment } from '../../src/index/index.js'

describe('a segment that inflates past what its size allows', () => {
  it('is refused while inflating, whatever row count its header claims, and leaves nothing behind', async () => {
    const dir = await useTempDir()
    // 64 MiB of zeros: brotli makes a few hundred bytes of it.
    const database = join(dir, 'bomb.sqlite')
    const handle = await open(database, 'w')
    await handle.truncate(64 * 1024 * 1024)
    await handle.close()
    const range = { deviceId: 'a'.repeat(32), kind: 'delta' as const, from: 0, to: 400_000 }
    const sealed = await sealSegment({ database, path: join(dir, 'bomb.seg'), range, entries: 400_000, encryption: 'none', stateDir: dir })
    expect((await stat(sealed.path)).size).toBeLessThan(64 * 1024)
    const destination = join(dir, 'out.sqlite')
    const err = await openSegment({ path: sealed.path, destination, name: 'bafy-bomb', stateDir: dir, acceptUnencrypted: true, expected: { ...range, entries: 400_000 }, check: (d) => { checkSegment(d, { ...range, entries: 400_000 }, 'bafy-bomb') } }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(SnapshotTooLargeError)
    expect((err as Error).message).toMatch(/inflates past 4194304 bytes/)
    expect((await readdir(dir)).sort()).toEqual(['bomb.seg', 'bomb.sqlite'])
  })
})
