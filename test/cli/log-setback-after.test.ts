import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, type ContentDevice } from './content-devices.js'

interface LogJson { publishesKept: number, forgottenVersions: number, versions: Array<{ cid: string, size: number, current: boolean, device: string, seq: number }> }
const logOf = async (d: ContentDevice, extra: string[] = []): Promise<LogJson> => JSON.parse((await ok(d, ['log', 'notes/doc.bin', '--json', ...extra])).stdout) as LogJson
const heads = async (d: ContentDevice): Promise<string[]> => (JSON.parse((await ok(d, ['history', '--json'])).stdout) as Array<{ cid: string }>).map(r => r.cid)

describe.skipIf(EXTERNAL)('log after a set-back pointer', () => {
  it('after a set back, a snapshot on top (the documented recovery) moves the head; nothing is called forgotten', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a', 'compact_after_deltas = 100\n')
    for (let i = 0; i < 3; i++) {
      await writeFile(join(a.folder, 'doc.bin'), randomBytes(1000 + i))
      await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: `2026-03-01T0${i + 1}:00:00.000Z` })
    }
    const cids = await heads(a)
    await logOf(a)
    // The set back, then the documented recovery: a snapshot on top of the pointer.
    await service.clients.pointers.put({ snapshotCid: cids[2] as string, engine: 'cidsync-sqlite/2', namespace: 'content-faults', network: 'mainnet' })
    const setBack = await a.run(['log', 'notes/doc.bin', '--json'])
    expect(setBack.stderr).toContain('an older publish than the head this device read before')
    await writeFile(join(a.folder, 'doc.bin'), randomBytes(1003))
    const snap = await a.run(['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T05:00:00.000Z' })
    const after = await a.run(['log', 'notes/doc.bin', '--json'])
    expect(snap.code, snap.stderr).toBe(0)
    // The snapshot chains onto this device's own last publish: the head moves on, the set back is over.
    expect((await heads(a)).slice(1)).toEqual(cids)
    const parsed = JSON.parse(after.stdout) as LogJson
    expect(after.stderr).not.toContain('older publish')
    expect(parsed.versions.map(v => v.size)).toEqual([1003, 1002, 1001, 1000])
    expect(parsed.forgottenVersions).toBe(0)
  }, 240_000)
})
