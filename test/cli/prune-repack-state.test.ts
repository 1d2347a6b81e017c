import { describe, expect, it } from 'vitest'
import { readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { contentDevice, ok, shareKey } from './content-devices.js'
import { mostlyDeadPack, repackedAndDeleted, RETENTION, AT_THIRD } from './repack-devices.js'
import { sha } from './retention-devices.js'

describe.skipIf(EXTERNAL)('a repack seen from the exits and a state dir set back', () => {
  it('a kept publish from before a repack exports with its content in the whole history, and says so when asked alone', async () => {
    const root = await useTempDir()
    const { a, v3, service } = await repackedAndDeleted(root)
    // `get --at` brings the 03:00 publish back through the newer records: it is kept and restorable.
    const got = await a.run(['get', ...[...v3.keys()].map(n => `notes/${n}`), '--to', join(root, 'got'), '--at', AT_THIRD])
    expect(got.code, got.stderr).toBe(0)
    // Its export alone cannot carry it: the records naming the new pack are in later publishes only.
    const usb = join(root, 'usb')
    const alone = await a.run(['export', '--dir', join(root, 'alone'), '--content', '--at', AT_THIRD])
    expect({ code: alone.code, advice: alone.stderr.includes('Export the whole history instead (without --at)') }, alone.stderr).toEqual({ code: 1, advice: true })
    // The whole history does: a new device brings the 03:00 publish back from it alone.
    await ok(a, ['export', '--dir', usb, '--content'])
    const b = await contentDevice(root, service, 'b', RETENTION)
    await shareKey(a, b)
    await ok(b, ['restore', '--from', usb, '--at', AT_THIRD])
    const back = await b.run(['restore', '--files', '--to', join(root, 'from-usb'), '--from', usb])
    expect(back.code, back.stderr).toBe(0)
    for (const [name, hash] of v3) expect(sha(await readFile(join(root, 'from-usb', 'notes', name))), name).toBe(hash)
  }, 300_000)

  it('a prune killed once its new pack is stored leaves no spool file behind after a rerun', async () => {
    const root = await useTempDir()
    const { a } = await mostlyDeadPack(root)
    const killed = await a.run(['prune'], { CIDSYNC_FAILPOINT: 'prune:repack-stored' })
    expect(killed.signal, killed.stderr).toBe('SIGKILL')
    const snapshots = join(a.state, 'snapshots')
    const spooled = (await readdir(snapshots)).filter(n => n.includes('repack'))
    expect(spooled.length).toBe(1)
    await ok(a, ['prune'])
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T04:00:00.000Z' })
    await ok(a, ['prune'])
    // The dead run's spool (sealed content, up to a pack's size) is nobody's now.
    expect((await readdir(snapshots)).filter(n => n.includes('repack'))).toEqual([])
    await rm(snapshots, { recursive: true, force: true })
  }, 300_000)

  it('an index set back to a publish before the repack, then published, keeps its files restorable', async () => {
    const root = await useTempDir()
    const { a, v3, service } = await repackedAndDeleted(root)
    // A publish after the prune reads its list.
    await writeFile(join(a.folder, 't1.txt'), 'one')
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T04:30:00.000Z' })
    // The index set back to 03:00, whose records name the old pack; the folder is as it was.
    await ok(a, ['restore', '--at', AT_THIRD, '--force'])
    await writeFile(join(a.folder, 't2.txt'), 'two')
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T05:00:00.000Z' })
    await writeFile(join(a.folder, 't3.txt'), 'three')
    await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T06:00:00.000Z' })
    await ok(a, ['forget'])
    await ok(a, ['prune'])
    await service.local.reclaim()
    // The head brings every file back, on this device and on a new one.
    const got = await a.run(['get', ...[...v3.keys()].map(n => `notes/${n}`), '--to', join(root, 'head')])
    expect(got.code, got.stdout + got.stderr).toBe(0)
    for (const [name, hash] of v3) expect(sha(await readFile(join(root, 'head', 'notes', name))), name).toBe(hash)
  }, 300_000)
})
