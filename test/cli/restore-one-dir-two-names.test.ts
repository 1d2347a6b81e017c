import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey } from './content-devices.js'

describe.skipIf(EXTERNAL)('one directory reached by two folders\' paths', () => {
  it('a later window sweeping the same directory by another name removes no temp of this run', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a', '[[folders]]\nname = "other"\npath = "a/other"\nstore = true\n')
    // On b, folder other's path is a symlink into notes/sub: both folders write into one directory.
    await mkdir(join(root, 'b', 'notes', 'sub'), { recursive: true })
    await symlink(join(root, 'b', 'notes', 'sub'), join(root, 'b', 'other'))
    const b = await contentDevice(root, service, 'b', '[[folders]]\nname = "other"\npath = "b/other"\nstore = true\n')
    await shareKey(a, b)
    await mkdir(join(a.folder, 'sub'))
    await mkdir(join(root, 'a', 'other'))
    const files = new Map<string, Buffer>()
    for (let i = 0; i < 20; i++) {
      const one = randomBytes(300 + i); files.set(join(a.folder, 'sub', `n${i}`), one); await writeFile(join(a.folder, 'sub', `n${i}`), one)
      const two = randomBytes(400 + i); files.set(join(root, 'a', 'other', `o${i}`), two); await writeFile(join(root, 'a', 'other', `o${i}`), two)
    }
    await ok(a, ['snapshot'])
    await ok(b, ['restore'])
    // One window, then windows of one and two rows: each sweeps the directory under both names
    // while files of an earlier window wait there for their batch's rename.
    for (const w of ['8192', '1', '2']) {
      for (const n of await readdir(join(root, 'b', 'notes', 'sub'))) await rm(join(root, 'b', 'notes', 'sub', n))
      const r = await b.run(['restore', '--files', '--overwrite', '--json'], { CIDSYNC_TEST_RESTORE_WINDOW: w })
      const failed = r.stdout.split('\n').filter(l => l.includes('"type":"file"') && !l.includes('"written"'))
      expect({ w, code: r.code, failed }).toEqual({ w, code: 0, failed: [] })
      for (const [p, bytes] of files) expect((await readFile(p.replace(join(root, 'a'), join(root, 'b')))).equals(bytes), p).toBe(true)
    }
  }, 300_000)
})
