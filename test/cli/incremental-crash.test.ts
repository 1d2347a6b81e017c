import { describe, expect, it } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { localServiceUnderTest, EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { cliDevice, ls, manifestAt, ok, shareKey, type HistoryRow } from './v2-cli.js'

const STEPS = ['snapshot', 'upload', 'deal', 'pointer', 'name', 'done'] as const

describe.skipIf(EXTERNAL)('an incremental publish killed with SIGKILL (processes)', () => {
  it('a publish killed with SIGKILL at every step of an incremental publish resumes to one linear chain that restores', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service') })
    const a = await cliDevice(root, service, 'a')
    const b = await cliDevice(root, service, 'b')
    await shareKey(a, b)
    await writeFile(join(a.folder, 'first.md'), 'first')
    await ok(a, ['snapshot'])
    for (const step of STEPS) {
      await writeFile(join(a.folder, `${step}.md`), step)
      const killed = await a.run(['snapshot'], { CIDSYNC_FAILPOINT: `publish:${step}` })
      expect(killed.signal, `${step}: ${killed.stderr}`).toBe('SIGKILL')
      const resumed = JSON.parse((await ok(a, ['snapshot', '--json'])).stdout) as { cid: string, skipped: boolean }
      const pointer = JSON.parse((await ok(a, ['pointer', 'get', '--json'])).stdout) as { snapshotCid: string }
      expect(pointer.snapshotCid, step).toBe(resumed.cid)
      expect(JSON.parse((await ok(b, ['restore', '--force', '--json'])).stdout), step).toMatchObject({ cid: resumed.cid })
      expect(await ls(b), step).toEqual(await ls(a))
    }
    const rows = JSON.parse((await ok(a, ['history', '--json', '--limit', '100'])).stdout) as HistoryRow[]
    expect(rows).toHaveLength(1 + STEPS.length)
    for (let i = 0; i < rows.length - 1; i++) expect(rows[i]?.previous).toBe(rows[i + 1]?.cid)
    expect(rows.map(r => r.entries)).toEqual([7, 6, 5, 4, 3, 2, 1])
    const m = await manifestAt(service, a, root, rows[0]?.cid as string)
    // Incremental throughout: one base and a delta per publish, contiguous.
    expect(m.devices[0]?.segments.map(s => s.kind)).toEqual(['base', ...STEPS.map(() => 'delta')])
    expect(JSON.parse((await ok(b, ['verify', '--full', '--json'])).stdout)).toMatchObject({ restorable: true, publishes: 7 })
  }, 240_000)
})
