import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey, tree, writeSomeFiles } from './content-devices.js'

/** Three folders of a large file and 250 small ones. */
const FILES = 3 * 251

describe.skipIf(EXTERNAL)('restore --files stopped by Ctrl-C (processes)', () => {
  it('exits 130 (143 for SIGTERM) counting the files done, leaves no temp file, and a second run brings the rest', async () => {
    const root = await useTempDir()
    const service = await localServiceUnderTest({ dir: join(root, 'service'), pageSize: 1000 })
    const a = await contentDevice(root, service, 'a')
    const b = await contentDevice(root, service, 'b')
    // Many more files than a restore has in hand at once (the batches held, the packs' files being
    // written): the signal, sent at the first file in place, stops it with files left to bring.
    for (let i = 0; i < 3; i++) await writeSomeFiles(a.folder, `dir-${i}`, { largeBytes: 1024 * 1024 + i, small: 250 })
    await ok(a, ['snapshot'])
    await shareKey(a, b)
    await ok(b, ['restore'])
    const to = join(root, 'back')
    // SIGINT sent once, as the first file takes its name: the run then ends its work in hand.
    const stopped = await b.run(['restore', '--files', '--to', to], { CIDSYNC_FAILPOINT: 'get:written=SIGINT' })
    expect(stopped.code, stopped.stderr).toBe(130)
    expect(stopped.stderr).toContain('[ERR_INTERRUPTED]')
    const placed = await tree(join(to, 'notes'))
    expect([...placed.keys()].filter(path => path.endsWith('.part')), 'temp files left').toEqual([])
    expect(stopped.stderr).toContain('Ctrl-C: stopping once the files being made durable are in place')
    expect(stopped.stderr).toContain(`stopped by SIGINT: ${placed.size} of ${FILES} files done (written, or found right); the rest were not finished, and no temp file stays`)
    expect(placed.size).toBeGreaterThan(0)
    expect(placed.size).toBeLessThan(FILES)
    const want = await tree(a.folder)
    for (const [path, sha] of placed) expect(sha, path).toBe(want.get(path))
    await ok(b, ['restore', '--files', '--to', to])
    expect(await tree(join(to, 'notes'))).toEqual(want)
    // SIGTERM (a service manager's stop) the same, with its own exit code.
    const other = join(root, 'other')
    const terminated = await b.run(['restore', '--files', '--to', other, '--json'], { CIDSYNC_FAILPOINT: 'get:written=SIGTERM' })
    expect(terminated.code, terminated.stderr).toBe(143)
    expect(terminated.stderr).toContain('stopped by SIGTERM: ')
    // With --json, the last line on stdout says it stopped, where a summary would be.
    const last = JSON.parse(terminated.stdout.trim().split('\n').at(-1) ?? '') as { type: string, signal: string, files: number, done: number }
    const written = await tree(join(other, 'notes'))
    expect(last).toEqual({ type: 'stopped', signal: 'SIGTERM', files: FILES, done: written.size })
    // Once every file is in place, a Ctrl-C only cuts the pointer's note short: the summary is said, exit 0.
    const late = join(root, 'late')
    const finished = await b.run(['restore', '--files', '--to', late, '--json'], { CIDSYNC_FAILPOINT: 'get:reporting=SIGINT' })
    expect(finished.code, finished.stderr).toBe(0)
    expect(JSON.parse(finished.stdout.trim().split('\n').at(-1) ?? '')).toMatchObject({ type: 'summary', files: { written: FILES } })
    expect(await tree(join(late, 'notes'))).toEqual(want)
    expect([...(await tree(join(other, 'notes'))).keys()].filter(path => path.endsWith('.part'))).toEqual([])
  }, 240_000)
})
