import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey, type ContentDevice } from '../cli/content-devices.js'

interface LogJson { publishesKept: number, forgottenVersions: number, versions: Array<{ cid: string, size: number, current: boolean, device: string, seq: number, deleted: boolean }> }
const logOf = async (d: ContentDevice, extra: string[] = []): Promise<LogJson> => JSON.parse((await ok(d, ['log', 'notes/doc.bin', '--json', ...extra])).stdout) as LogJson
const T = (h: number): NodeJS.ProcessEnv => ({ CIDSYNC_TEST_CLOCK: `2026-03-01T${String(h).padStart(2, '0')}:00:00.000Z` })

describe.skipIf(EXTERNAL)('attack2: log across two devices after a forget', () => {
  it('every version a kept publish holds still shows; restore --at agrees', async () => {
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
    const beforeB = await logOf(b)
    console.log('b before', beforeB.forgottenVersions, JSON.stringify(beforeB.versions.map(v => [v.size, v.deleted, v.device.slice(0, 4), v.seq])))
    const forgot = await ok(a, ['forget', '--json'], T(9))
    console.log('forget', forgot.stdout.replace(/\s+/g, ' ').slice(0, 1500))
    const afterB = await logOf(b)
    console.log('b after', afterB.forgottenVersions, afterB.publishesKept, JSON.stringify(afterB.versions.map(v => [v.size, v.deleted, v.device.slice(0, 4), v.seq])))
    const afterA = await logOf(a)
    console.log('a after', afterA.forgottenVersions, afterA.publishesKept, JSON.stringify(afterA.versions.map(v => [v.size, v.deleted, v.device.slice(0, 4), v.seq])))
    const hist = JSON.parse((await ok(b, ['history', '--json'])).stdout) as Array<{ cid: string, at: string, marks?: string[] }>
    console.log('history', JSON.stringify(hist.map(h => [h.at, h.marks])))
    // Each kept publish: what does restore --at bring back as doc.bin?
    for (const h of hist) {
      const to = join(root, `at-${h.cid.slice(-6)}`)
      const r = await b.run(['restore', '--files', '--at', h.at, '--to', to, '--json'])
      let size: number | string = 'absent'
      try { size = (await import('node:fs')).statSync(join(to, 'notes', 'doc.bin')).size } catch {}
      console.log('restore --at', h.at, r.code, size, r.stderr.slice(0, 300))
      if (typeof size === 'number') expect(afterB.versions.map(v => v.size)).toContain(size)
    }
    const cachedA = await logOf(a, ['--cached'])
    expect(cachedA.versions.map(v => v.size)).toEqual(afterA.versions.map(v => v.size))
  }, 300_000)
})
