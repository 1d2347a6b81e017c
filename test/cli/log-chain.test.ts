import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { historyChainKey } from '../../src/find/index.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey, type ContentDevice } from './content-devices.js'
import type { LocalService } from './v2-cli.js'

interface LogJson { publishesKept: number, forgottenVersions: number, versions: Array<{ cid: string, size: number, current: boolean, device: string, seq: number }> }
const logOf = async (d: ContentDevice, extra: string[] = []): Promise<LogJson> => JSON.parse((await ok(d, ['log', 'notes/doc.bin', '--json', ...extra])).stdout) as LogJson
const heads = async (d: ContentDevice): Promise<string[]> => (JSON.parse((await ok(d, ['history', '--json'])).stdout) as Array<{ cid: string }>).map(r => r.cid)
const sizes = (log: LogJson): number[] => log.versions.map(v => v.size)

/** A device that published `notes/doc.bin` `count` times (sizes 1000, 1001, ...) and read its log: the publishes, newest first. */
async function publishedVersions (count: number): Promise<{ root: string, service: LocalService, a: ContentDevice, cids: string[] }> {
  const root = await useTempDir()
  const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
  const a = await contentDevice(root, service, 'a', 'compact_after_deltas = 100\n')
  for (let i = 0; i < count; i++) {
    await writeFile(join(a.folder, 'doc.bin'), randomBytes(1000 + i))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: `2026-03-01T0${i + 1}:00:00.000Z` })
  }
  const cids = await heads(a)
  expect(cids.length).toBe(count)
  const full = await logOf(a)
  expect([full.forgottenVersions, sizes(full)]).toEqual([0, Array.from({ length: count }, (_, i) => 1000 + count - 1 - i)])
  return { root, service, a, cids }
}

describe.skipIf(EXTERNAL)('log and the chain it last walked', () => {
  it('keeps one chain per namespace: a log of another neither hides this one\'s versions nor mixes its rows in', async () => {
    const { root, service, a } = await publishedVersions(3)
    // Another namespace on the same service and key, published by another device.
    const b = await contentDevice(root, service, 'b')
    await writeFile(b.config, (await readFile(b.config, 'utf8')).replace('namespace = "content-faults"', 'namespace = "other"'))
    await shareKey(a, b)
    await writeFile(join(b.folder, 'doc.bin'), randomBytes(500))
    await ok(b, ['snapshot'])
    await logOf(a, ['--namespace', 'other'])
    // Walked again: the other namespace's rows are not this history's, and nothing was forgotten here.
    const walked = await logOf(a)
    expect([walked.forgottenVersions, sizes(walked)]).toEqual([0, [1002, 1001, 1000]])
    await logOf(a, ['--namespace', 'other'])
    const cached = await logOf(a, ['--cached'])
    expect([cached.forgottenVersions, sizes(cached)]).toEqual([0, [1002, 1001, 1000]])
    // The other namespace's log shows its device's version.
    expect(sizes(await logOf(a, ['--namespace', 'other', '--cached']))).toContain(500)
  }, 240_000)

  it('a pointer set back is said as such and hides nothing; a snapshot on top (the documented recovery) moves the head again', async () => {
    const { service, a, cids } = await publishedVersions(3)
    await service.clients.pointers.put({ snapshotCid: cids[2] as string, engine: 'cidsync-sqlite/2', namespace: 'content-faults', network: 'mainnet' })
    const setBack = await a.run(['log', 'notes/doc.bin'])
    expect(setBack.code).toBe(0)
    expect(setBack.stdout).not.toContain('only forgotten publishes held')
    expect(setBack.stdout).toContain('3 versions of notes/doc.bin')
    expect(setBack.stderr).toContain(`the pointer holds ${cids[2] as string}, an older publish than the head this device read before (${cids[0] as string})`)
    await writeFile(join(a.folder, 'doc.bin'), randomBytes(1003))
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T05:00:00.000Z' })
    // The snapshot chains onto this device's own last publish: the head moves on, the set back is over.
    expect((await heads(a)).slice(1)).toEqual(cids)
    const after = await a.run(['log', 'notes/doc.bin', '--json'])
    expect(after.stderr).not.toContain('older publish')
    const parsed = JSON.parse(after.stdout) as LogJson
    expect([parsed.forgottenVersions, sizes(parsed)]).toEqual([0, [1003, 1002, 1001, 1000]])
  }, 240_000)

  it('a mirror whose chain is behind the primary\'s does not call the newer versions forgotten', async () => {
    const { a, cids } = await publishedVersions(4)
    // What a walk leaves for `--from usb` when usb's pointer holds the oldest publish, walked already:
    // it stops at once, and notes that publish as usb's head.
    const db = new Database(join(a.state, 'history-rows.sqlite'))
    db.prepare('INSERT OR REPLACE INTO cache_meta (key, value) VALUES (?, ?)').run(`head ${historyChainKey('content-faults', 'mainnet', 'usb')}`, cids[3])
    db.close()
    expect((await logOf(a, ['--cached', '--from', 'usb'])).forgottenVersions).toBe(0)
  }, 240_000)
})
