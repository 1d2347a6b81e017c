import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startInProcessDaemon, statusOf } from '../helpers/in-process-daemon.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

describe('the daemon stores content in the background', () => {
  it('stores what a storing folder holds once it settles, and a changed file again; a folder without store stays index-only', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'kept'))
    await writeFile(join(dir, 'kept', 'a.txt'), 'a')
    await writeFile(join(dir, 'kept', 'b.txt'), 'bb')
    const { port, notes } = await startInProcessDaemon(dir, '[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n')
    await writeFile(join(notes, 'not-stored.txt'), 'index only')
    const stored = await until(async () => {
      const s = await statusOf(port)
      const kept = s.content?.folders.find(f => f.folder === 'kept')
      return kept !== undefined && kept.protected.files === 2 && kept.pending.files === 0 ? s : undefined
    }, 60_000, 'both files of the storing folder stored')
    expect(stored.content?.folders.map(f => f.folder)).toEqual(['kept'])
    expect(stored.content?.failures).toEqual([])
    await writeFile(join(dir, 'kept', 'a.txt'), 'a, changed')
    await until(async () => {
      const kept = (await statusOf(port)).content?.folders.find(f => f.folder === 'kept')
      return kept?.protected.files === 2 && kept.pending.files === 0 && kept.protected.bytes === 'a, changed'.length + 2 ? kept : undefined
    }, 60_000, 'the changed file stored again')
  })
})
