import { readdir, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { PAST_KEEP, prunePast } from '../../../src/sync/read/past-prune.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { deadPid } from '../../helpers/dead-pid.js'

/** A process id that was in use and is not any more. */
describe('past/ (the indexes find --at and the dashboard built for past publishes)', () => {
  it('keeps the most recently used few with their search caches, removes killed builds, leaves the rest alone', async () => {
    const dir = await useTempDir()
    const names = ['bafya', 'bafyb', 'bafyc', 'bafyd', 'bafye', 'bafyf']
    for (const [i, name] of names.entries()) {
      for (const file of [`${name}.sqlite`, `${name}.sqlite-wal`, `${name}.search.sqlite`, `${name}.search.sqlite-shm`]) {
        await writeFile(join(dir, file), 'x')
      }
      // bafya used longest ago, bafyf most recently.
      const at = new Date(Date.UTC(2026, 0, 1 + i))
      await utimes(join(dir, `${name}.sqlite`), at, at)
    }
    const dead = await deadPid()
    await writeFile(join(dir, `bafyz.sqlite.building-${dead}`), 'half')
    await writeFile(join(dir, `bafyz.sqlite.building-${dead}-wal`), 'half')
    await writeFile(join(dir, `bafyy.sqlite.building-${process.pid}`), 'being built')
    await writeFile(join(dir, 'notes.txt'), 'not ours')

    // bafya is the one just asked for: kept though it is the oldest.
    const { removed } = await prunePast(dir, 'bafya')
    const left = (await readdir(dir)).toSorted()
    const kept = ['bafya', ...names.slice(-(PAST_KEEP - 1))]
    expect(left).toEqual([
      ...kept.flatMap(n => [`${n}.search.sqlite`, `${n}.search.sqlite-shm`, `${n}.sqlite`, `${n}.sqlite-wal`]),
      `bafyy.sqlite.building-${process.pid}`,
      'notes.txt'
    ].toSorted())
    expect(removed).toContain(`bafyz.sqlite.building-${dead}`)
    expect(removed).toContain('bafyb.search.sqlite')
  })

  it('answers nothing removed for a dir that is not there', async () => {
    const dir = await useTempDir()
    expect(await prunePast(join(dir, 'absent'), 'bafya')).toEqual({ removed: [] })
  })
})
