import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey, type ContentDevice } from './content-devices.js'

interface LogJson { publishesKept: number, forgottenVersions: number, versions: Array<{ cid: string, size: number, current: boolean, device: string, seq: number }> }
const logOf = async (d: ContentDevice, extra: string[] = []): Promise<LogJson> => JSON.parse((await ok(d, ['log', 'notes/doc.bin', '--json', ...extra])).stdout) as LogJson
const heads = async (d: ContentDevice): Promise<string[]> => (JSON.parse((await ok(d, ['history', '--json'])).stdout) as Array<{ cid: string }>).map(r => r.cid)

describe.skipIf(EXTERNAL)('log and the chain it last walked', () => {
  it('keeps one chain per namespace: a log of another neither hides this one\'s versions nor mixes its rows in', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a', 'compact_after_deltas = 100\n')
    for (let i = 0; i < 3; i++) {
      await writeFile(join(a.folder, 'doc.bin'), randomBytes(1000 + i))
      await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: `2026-03-01T0${i + 1}:00:00.000Z` })
    }
    const cids = await heads(a)
    expect(cids.length).toBe(3)
    const full = await logOf(a)
    expect(full.versions.map(v => v.size)).toEqual([1002, 1001, 1000])
    expect(full.forgottenVersions).toBe(0)

    // Another namespace on the same service and key, published by another device.
    const b = await contentDevice(root, service, 'b')
    await writeFile(b.config, (await readFile(b.config, 'utf8')).replace('namespace = "content-faults"', 'namespace = "other"'))
    await shareKey(a, b)
    await writeFile(join(b.folder, 'doc.bin'), randomBytes(500))
    await ok(b, ['snapshot'])
    await logOf(a, ['--namespace', 'other'])
    // Back on this device's own namespace, from the cache: nothing was forgotten here.
    const walked = await logOf(a)
    // Walked again: the other namespace's rows are not this history's, and nothing was forgotten here.
    expect([walked.forgottenVersions, walked.versions.map(v => v.size)]).toEqual([0, [1002, 1001, 1000]])
    await logOf(a, ['--namespace', 'other'])
    const cachedAfter = await logOf(a, ['--cached'])
    expect([cachedAfter.forgottenVersions, cachedAfter.versions.map(v => v.size)]).toEqual([0, [1002, 1001, 1000]])
    // The other namespace's log shows its device's version.
    expect((await logOf(a, ['--namespace', 'other', '--cached'])).versions.map(v => v.size)).toContain(500)
  }, 240_000)

  it('a pointer set back is said as such, and hides nothing as forgotten', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a', 'compact_after_deltas = 100\n')
    for (let i = 0; i < 3; i++) {
      await writeFile(join(a.folder, 'doc.bin'), randomBytes(1000 + i))
      await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: `2026-03-01T0${i + 1}:00:00.000Z` })
    }
    const cids = await heads(a)
    await logOf(a)
    await service.clients.pointers.put({ snapshotCid: cids[2] as string, engine: 'cidsync-sqlite/2', namespace: 'content-faults', network: 'mainnet' })
    const r = await a.run(['log', 'notes/doc.bin'])
    expect(r.code).toBe(0)
    expect(r.stdout).not.toContain('only forgotten publishes held')
    expect(r.stdout).toContain('3 versions of notes/doc.bin')
    expect(r.stderr).toContain(`the pointer holds ${cids[2] as string}, an older publish than the head this device read before (${cids[0] as string})`)
  }, 240_000)
})
