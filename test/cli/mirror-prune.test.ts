import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { until } from '../helpers/wait.js'
import { DirectoryObjectStore } from '../../src/store/index.js'
import { device, ok, proofDir, status } from '../proof/harness.js'

const ENV = { ...process.env, CIDSYNC_MIRROR_RETRY_MAX_MS: '500', CIDSYNC_MIRROR_POINTER_CHECK_MS: '300' }

/** Storing, schedules that never fire, a policy that keeps one publish, and a directory mirror. */
const EXTRA = (usb: string): string =>
  '[snapshot]\nschedule = "0 0 1 1 *"\nquiet_seconds = 86400\nmin_interval_seconds = 0\ndeal = false\ncompact_after_deltas = 1\n' +
  '[reconcile]\nschedule = "0 0 1 1 *"\n[verify]\nschedule = ""\n' +
  '[retention]\nkeep_last = 1\nprune_margin = "0s"\n' +
  '[[folders]]\nname = "kept"\npath = "kept"\nstore = true\n' +
  `[[mirrors]]\nname = "usb"\npath = "${usb}"\n`

function logged (state: string, kind: 'object' | 'delete'): string[] {
  const db = new Database(join(state, 'sync.sqlite'), { readonly: true })
  try {
    return db.prepare('SELECT cid FROM replica_log WHERE kind = ? ORDER BY seq').pluck().all(kind) as string[]
  } finally {
    db.close()
  }
}

describe('a mirror that was behind while a prune ran', () => {
  it('skips what the prune deleted instead of asking the primary for it, and catches up with nothing missing', async () => {
    const root = await proofDir()
    const usb = join(root, 'usb')
    const d = await device(root, 'a', { extra: EXTRA(usb) })
    const kept = join(d.root, 'kept')
    await mkdir(kept)
    await writeFile(join(kept, 'notes.txt'), 'the same in both\n')
    for (const at of ['2026-03-01T01:00:00.000Z', '2026-03-01T02:00:00.000Z']) {
      await writeFile(join(kept, 'big.bin'), randomBytes(3 * 1024 * 1024 + 7))
      await ok(['snapshot', '--config', d.config], { env: { ...ENV, CIDSYNC_TEST_CLOCK: at } })
    }
    const forgot = JSON.parse((await ok(['forget', '--json', '--config', d.config], { env: ENV })).stdout) as { head: string }
    const pruned = JSON.parse((await ok(['prune', '--json', '--config', d.config], { env: ENV })).stdout) as { deleted: { content: number } }
    expect(pruned.deleted.content, JSON.stringify(pruned)).toBeGreaterThan(0)
    const deleted = new Set(logged(d.state, 'delete'))

    // The mirror is made only now: everything logged before the prune is still ahead of it.
    await ok(['login', '--config', d.config, '--mirror', 'usb'])
    const daemon = new DaemonProcess(['--config', d.config], { env: ENV })
    try {
      await daemon.logged('service ready', 60_000)
      const caught = await until(async () => {
        const m = (await status(d)).mirrors[0]
        return m.objectsBehind === 0 && m.lastPublish?.cid === forgot.head ? m : undefined
      }, 60_000, 'the mirror caught up', 100)
      // Nothing was asked of the primary that the prune had deleted: nothing is missing, no error.
      expect(caught.unavailable.count).toBe(0)
      expect(caught.lastError).toBeNull()
    } finally {
      await daemon.stop()
    }
    const store = await DirectoryObjectStore.open(usb)
    for (const cid of logged(d.state, 'object')) expect(await store.has(cid), cid).toBe(!deleted.has(cid))
    const verify = await runCli(['verify', '--mirror', 'usb', '--config', d.config], { env: ENV, timeoutMs: 120_000 })
    expect(verify.code, verify.stderr).toBe(0)
  }, 300_000)
})
