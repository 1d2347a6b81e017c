import { describe, expect, it } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { StatusDocument } from '../../src/daemon/index.js'
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

  it('counts what dedup saved from the index (kept over a reload and a restart), and shows no upload rate while idle', async () => {
    const dir = await useTempDir()
    await mkdir(join(dir, 'kept'))
    const kept = join(dir, 'kept')
    const extra = '[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n'
    // A long first version, replaced by a short one: what this device ever uploaded outweighs what it holds now.
    await writeFile(join(kept, 'a.txt'), 'x'.repeat(100))
    await writeFile(join(kept, 'b.txt'), 'bb')
    const first = await startInProcessDaemon(dir, extra)
    const folder = async (port: number, files: number, bytes: number): Promise<StatusDocument> => await until(async () => {
      const s = await statusOf(port)
      const f = s.content?.folders.find(x => x.folder === 'kept')
      return f?.protected.files === files && f.protected.bytes === bytes && f.pending.files === 0 && s.content?.running === false ? s : undefined
    }, 60_000, `${files} files of ${bytes} B stored`)
    await folder(first.port, 2, 102)
    await writeFile(join(kept, 'a.txt'), 'y'.repeat(10))
    await folder(first.port, 2, 12)
    // A copy of content this device stored is not uploaded again: its bytes are saved.
    await writeFile(join(kept, 'copy.txt'), 'y'.repeat(10))
    const idle = await folder(first.port, 3, 22)
    expect(idle.content?.savedByDedup).toBe(10)
    expect(idle.content?.uploadRate).toBe(0)
    await first.daemon.reload()
    expect((await statusOf(first.port)).content?.savedByDedup).toBe(10)
    await first.daemon.stop()
    const second = await startInProcessDaemon(dir, extra)
    expect((await folder(second.port, 3, 22)).content?.savedByDedup).toBe(10)
  })
})

