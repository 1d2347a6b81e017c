import { describe, expect, it } from 'vitest'
import { lstat, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { placeEntries } from '../../../src/sync/restore/entries.js'
import { safeComponents } from '../../../src/sync/restore/safe-target.js'
import type { Entry } from '../../../src/index/index.js'
import { useTempDir } from '../../helpers/temp-dir.js'

const dirRow = (path: string, mode: number, mtimeMs: number): Entry => ({
  deviceId: 'a', folder: 'tree', path, size: 0, mtimeMs, cid: null, cidProfile: 'kubo-cidv1', updatedAt: 0, deleted: false, seq: 0,
  meta: { kind: 'dir', mode, uid: 0, gid: 0, owner: null, group: null, target: null, linkGroup: null }
})

describe('placeEntries: the directories', () => {
  it('gives every directory its mode and mtime, a level at a time: one made on the way moves no parent after it was set', async () => {
    const root = await useTempDir()
    // Three levels of siblings; the files' restore made some, the rest (empty ones) are made here.
    const rows: Entry[] = []
    for (let a = 0; a < 4; a++) {
      rows.push(dirRow(`d${a}/`, 0o750, 1_600_000_000_000 + a))
      for (let b = 0; b < 6; b++) {
        rows.push(dirRow(`d${a}/e${b}/`, 0o705, 1_600_000_100_000 + b))
        // Empty directories: made during this call, in a parent finished on the next level up.
        for (let c = 0; c < 3; c++) rows.push(dirRow(`d${a}/e${b}/f${c}/`, 0o700, 1_600_000_200_000 + c))
      }
      await mkdir(join(root, 'tree', `d${a}`, 'e0'), { recursive: true })
      await writeFile(join(root, 'tree', `d${a}`, 'e0', 'file'), 'x')
    }
    // Shuffled: the order of the rows is not the order of the levels.
    const shuffled = [...rows].sort((x, y) => (x.path.length * 7919 + x.mtimeMs) % 13 - (y.path.length * 7919 + y.mtimeMs) % 13)
    const outcomes = await placeEntries(shuffled.map(row => ({ row })), {
      place: (row) => ({ root, components: safeComponents(`${row.folder}/${row.path.slice(0, -1)}`), dirMode: () => 0o700 }),
      attrs: (row) => ({ mode: row.meta?.mode ?? 0o755 }),
      overwrite: false
    })
    expect(outcomes).toHaveLength(rows.length)
    expect(outcomes.every(o => o.outcome === 'written' && o.kind === 'dir')).toBe(true)
    // Deepest first, so the outcomes come a level at a time.
    const depths = outcomes.map(o => o.path.split('/').length)
    expect(depths).toEqual([...depths].sort((x, y) => y - x))
    for (const row of rows) {
      const there = await lstat(join(root, 'tree', row.path))
      expect(there.isDirectory()).toBe(true)
      expect(there.mode & 0o7777).toBe(row.meta?.mode)
      expect(Math.abs(there.mtimeMs - row.mtimeMs)).toBeLessThan(0.01)
    }
  })
})
