import { describe, expect, it } from 'vitest'
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { useTempDir } from '../helpers/temp-dir.js'
import { ok } from './content-devices.js'
import { embeddedDevice } from './retention-devices.js'
import { allRecordObjects, expectFiles, forgetFirstOfThree, AT_THIRD, type PruneJson } from './repack-devices.js'

const RETENTION = '[retention]\nkeep_last = 2\nprune_margin = "0s"\n'

/**
 * Attack: the repack on the embedded service, where a new pack's spool file becomes the service's
 * own pack (hard-linked, nodes appended). Killed once the pack is stored, or once its records are;
 * the leftover spool is the service's pack under another name. The rerun must finish, nothing
 * kept may be lost, no file in the state dir may be readable by others, and verify passes.
 */
describe('a repack on the embedded service killed midway', () => {
  for (const point of ['prune:repack-stored', 'prune:repack-recorded', 'prune:repack-stored=EIO']) {
    it(`finishes on a rerun (${point}), every kept publish restoring`, async () => {
      const root = await useTempDir()
      const service = join(root, 'service')
      const a = await embeddedDevice(root, 'a', service, RETENTION)
      const { v3 } = await forgetFirstOfThree(a, 10)
      const killed = await a.run(['prune'], { CIDSYNC_FAILPOINT: point })
      if (point.includes('=')) expect(killed.code, killed.stderr).not.toBe(0)
      else expect(killed.signal, killed.stderr).toBe('SIGKILL')
      const snapshots = join(a.state, 'snapshots')
      for (const name of await readdir(snapshots)) expect((await stat(join(snapshots, name))).mode & 0o077, name).toBe(0)
      await expectFiles(a, v3, join(root, 'killed'))
      const rerun = JSON.parse((await ok(a, ['prune', '--json'])).stdout) as PruneJson
      expect(rerun.repacked?.packs === 1 || rerun.repacked?.waiting === 1, JSON.stringify(rerun.repacked)).toBe(true)
      await ok(a, ['snapshot'], { CIDSYNC_TEST_CLOCK: '2026-03-01T04:00:00.000Z' })
      await ok(a, ['forget'])
      await ok(a, ['prune'])
      await ok(a, ['prune'])
      expect((await readdir(snapshots)).filter(n => n.includes('repack')), point).toEqual([])
      await expectFiles(a, v3, join(root, 'after'))
      await expectFiles(a, v3, join(root, 'after-03'), ['--at', AT_THIRD])
      expect(allRecordObjects(a).length).toBeGreaterThan(0)
      const verified = await a.run(['verify', '--full', '--content'])
      expect(verified.code, `${point}: ${verified.stdout}${verified.stderr}`).toBe(0)
    }, 600_000)
  }
})
