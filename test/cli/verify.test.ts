import { describe, expect, it } from 'vitest'
import { readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Manifest } from '../../src/snapshot/index.js'
import { localServiceUnderTest, EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { cliDevice, manifestAt, ok, publishCid, sha } from './v2-cli.js'
import { flipStoredBlock } from '../helpers/service-blocks.js'

describe.skipIf(EXTERNAL)('cidsync verify (processes)', () => {
  it('verify: exit 0 on a sound chain; a corrupted stored segment is exit 4 naming it, the index untouched; --full walks the whole history', async () => {
    const root = await useTempDir()
    const serviceDir = join(root, 'service')
    const service = await localServiceUnderTest({ dir: serviceDir })
    const a = await cliDevice(root, service, 'a', 'deal = false\ncompact_after_deltas = 1\ncompact_fraction = 100\n')
    const cids: string[] = []
    for (let i = 0; i < 3; i++) {
      await writeFile(join(a.folder, `n-${i}.md`), `note ${i}`)
      cids.push(await publishCid(a))
    }
    expect((await ok(a, ['verify'])).stdout).toMatch(/^restorable: /)
    expect(JSON.parse((await ok(a, ['verify', '--full', '--json'])).stdout)).toMatchObject({ restorable: true, publishes: 3, segments: 3, failed: null })
    // A drill leaves nothing in snapshots/: no database, no -wal or -shm beside one.
    expect((await readdir(join(a.state, 'snapshots'))).filter(name => /verify|-wal$|-shm$|\.sqlite$/.test(name))).toEqual([])

    const manifest = async (cid: string): Promise<Manifest> => await manifestAt(service, a, root, cid)
    // Publish 2 is base + delta; publish 3 compacted to one base: the delta is only in the history.
    const oldDelta = (await manifest(cids[1] as string)).devices[0]?.segments[1]?.cid as string
    const head = (await manifest(cids[2] as string)).devices[0]?.segments[0]?.cid as string
    const flip = async (cid: string): Promise<void> => {
      flipStoredBlock(serviceDir, cid)
    }
    await flip(oldDelta)
    expect((await a.run(['verify'])).code).toBe(0)
    const full = await a.run(['verify', '--full'])
    expect(full.code).toBe(4)
    expect(full.stderr).toContain(oldDelta)

    const before = await sha(join(a.state, 'index.sqlite'))
    await flip(head)
    const bad = await a.run(['verify'])
    expect(bad.code).toBe(4)
    expect(bad.stdout).toContain('NOT restorable')
    expect(bad.stderr).toContain(head)
    expect(await sha(join(a.state, 'index.sqlite'))).toBe(before)
    const json = await a.run(['verify', '--json'])
    expect(json.code).toBe(4)
    expect(JSON.parse(json.stdout)).toMatchObject({ restorable: false, failed: { cid: head } })
  })
})
