import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey, type ContentDevice } from './content-devices.js'

interface LogJson { publishesKept: number, forgottenVersions: number, versions: Array<{ cid: string, size: number, current: boolean, device: string, seq: number, deleted: boolean }> }
const logOf = async (d: ContentDevice, extra: string[] = []): Promise<LogJson> => JSON.parse((await ok(d, ['log', 'notes/doc.bin', '--json', ...extra])).stdout) as LogJson
const T = (h: number): NodeJS.ProcessEnv => ({ CIDSYNC_TEST_CLOCK: `2026-03-01T${String(h).padStart(2, '0')}:00:00.000Z` })

describe.skipIf(EXTERNAL)('log across two devices after a forget', () => {
  it('shows every version a kept publish holds (a marked one too), hides the rest on both devices, and restore --at agrees', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const policy = 'compact_after_deltas = 100\n[retention]\nkeep_last = 1\nprune_margin = "0s"\n'
    const a = await contentDevice(root, service, 'a', policy)
    const b = await contentDevice(root, service, 'b', policy)
    await shareKey(a, b)
    await writeFile(join(a.folder, 'doc.bin'), randomBytes(1001))
    await ok(a, ['snapshot'], T(1))
    await ok(b, ['restore'], T(2))
    await writeFile(join(b.folder, 'doc.bin'), randomBytes(1002))
    await ok(b, ['snapshot', '--keep', 'b-mark'], T(3))
    await writeFile(join(a.folder, 'doc.bin'), randomBytes(1003))
    await ok(a, ['snapshot'], T(5))
    await rm(join(a.folder, 'doc.bin'))
    await ok(a, ['snapshot'], T(6))
    await writeFile(join(a.folder, 'doc.bin'), randomBytes(1004))
    await ok(a, ['snapshot'], T(7))
    await writeFile(join(a.folder, 'other.txt'), 'x')
    await ok(a, ['snapshot'], T(8))
    expect((await logOf(b)).forgottenVersions).toBe(0)
    // keep_last = 1 keeps a's newest; b's marked publish stays too.
    await ok(a, ['forget'], T(9))
    const sizes = (log: LogJson): Array<number | string> => log.versions.map(v => v.deleted ? 'deleted' : v.size).sort()
    const afterA = await logOf(a)
    const afterB = await logOf(b)
    // 1001: held by b's marked publish (a's rows as b merged them); 1003 and the deletion: only by forgotten ones.
    expect(sizes(afterA)).toEqual([1001, 1002, 1004])
    expect(sizes(afterB)).toEqual([1001, 1002, 1004])
    // b read the history before the forget: it knew those two, and counts them as not shown.
    expect(afterB.forgottenVersions).toBe(2)
    const hist = JSON.parse((await ok(b, ['history', '--json'])).stdout) as Array<{ cid: string, at: string }>
    expect(hist.length).toBe(2)
    // What each kept publish restores as doc.bin is a version log shows.
    for (const h of hist) {
      const to = join(root, `at-${h.cid.slice(-6)}`)
      await ok(b, ['restore', '--files', '--at', h.at, '--to', to])
      expect(sizes(afterB)).toContain((await stat(join(to, 'notes', 'doc.bin'))).size)
    }
    expect(sizes(await logOf(a, ['--cached']))).toEqual(sizes(afterA))
  }, 300_000)
})
