import { describe, expect, it } from 'vitest'
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { until } from '../helpers/wait.js'
import { DirectoryObjectStore } from '../../src/store/index.js'
import { device, ok, proofDir, shareKey, status, type Device } from '../proof/harness.js'

const ENV = { ...process.env, CIDSYNC_MIRROR_RETRY_MAX_MS: '500', CIDSYNC_MIRROR_POINTER_CHECK_MS: '300' }

/** Storing, schedules that never fire, a policy that keeps `keep` publishes, and a directory mirror. */
const EXTRA = (usb: string, keep = 1): string =>
  '[snapshot]\nschedule = "0 0 1 1 *"\nquiet_seconds = 86400\nmin_interval_seconds = 0\ndeal = false\ncompact_after_deltas = 1\n' +
  '[reconcile]\nschedule = "0 0 1 1 *"\n[verify]\nschedule = ""\n' +
  `[retention]\nkeep_last = ${keep}\nprune_margin = "0s"\n` +
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

/** The objects of `d`'s content records of files of `size` bytes. */
function objectsOfSize (d: Device, size: number): string[] {
  const db = new Database(join(d.state, 'index.sqlite'), { readonly: true })
  try {
    const rows = db.prepare('SELECT objects FROM content WHERE size = ?').pluck().all(size) as string[]
    return rows.flatMap(row => (JSON.parse(row) as Array<[string, number, number]>).map(([object]) => object))
  } finally {
    db.close()
  }
}

/** Runs `d`'s daemon until its mirror holds everything it logged (and `head`, when given). */
async function mirrorCatchesUp (d: Device, head?: string): Promise<void> {
  const daemon = new DaemonProcess(['--config', d.config], { env: ENV })
  try {
    await daemon.logged('service ready', 60_000)
    await until(async () => {
      const m = (await status(d)).mirrors[0]
      return m.objectsBehind === 0 && (head === undefined || m.lastPublish?.cid === head) ? m : undefined
    }, 60_000, 'the mirror caught up', 100)
  } finally {
    await daemon.stop()
  }
}

describe('a mirror two devices share, behind a prune of one', () => {
  it('keeps the copy the other device made after the prune', async () => {
    const root = await proofDir()
    const usb = join(root, 'usb')
    const a = await device(root, 'a', { extra: EXTRA(usb) })
    const b = await device(root, 'b', { extra: EXTRA(usb) })
    await shareKey(a, b)
    for (const d of [a, b]) await mkdir(join(d.root, 'kept'))
    const bytes = randomBytes(3 * 1024 * 1024 + 11)
    await writeFile(join(a.root, 'kept', 'doc.bin'), bytes)
    await writeFile(join(a.root, 'kept', 'notes.txt'), 'stays\n')
    await ok(['snapshot', '--config', a.config], { env: { ...ENV, CIDSYNC_TEST_CLOCK: '2026-03-01T01:00:00.000Z' } })
    await ok(['restore', '--config', b.config], { env: ENV })
    await rm(join(a.root, 'kept', 'doc.bin'))
    await ok(['snapshot', '--config', a.config], { env: { ...ENV, CIDSYNC_TEST_CLOCK: '2026-03-01T02:00:00.000Z' } })
    await ok(['forget', '--config', a.config], { env: ENV })
    await ok(['prune', '--config', a.config], { env: ENV })

    // b adds the same bytes back after the prune: it stores them again, and its mirror copies them.
    await writeFile(join(b.root, 'kept', 'copy.bin'), bytes)
    const head = (JSON.parse((await ok(['snapshot', '--json', '--config', b.config], { env: { ...ENV, CIDSYNC_TEST_CLOCK: '2026-03-01T03:00:00.000Z' } })).stdout) as { cid: string }).cid
    const objects = objectsOfSize(b, bytes.length)
    expect(objects.length).toBeGreaterThan(0)
    for (const d of [a, b]) await ok(['login', '--config', d.config, '--mirror', 'usb'])
    await mirrorCatchesUp(b, head)
    const store = await DirectoryObjectStore.open(usb)
    for (const cid of objects) expect(await store.has(cid), cid).toBe(true)

    // a's mirror loop comes later, with the prune's deletes: b's copy is newer than them.
    await mirrorCatchesUp(a)
    for (const cid of objects) expect(await store.has(cid), cid).toBe(true)
  }, 300_000)
})

describe('a mirror behind a prune that rewrote a pack', () => {
  it('gets the new pack, deletes the old, and brings a publish from before the rewrite back from the mirror alone', async () => {
    const root = await proofDir()
    const usb = join(root, 'usb')
    const a = await device(root, 'a', { extra: EXTRA(usb, 2) })
    const kept = join(a.root, 'kept')
    await mkdir(kept)
    const at = (h: number): string => `2026-03-01T0${h}:00:00.000Z`
    const files = new Map<string, Buffer>()
    const write = async (names: readonly number[]): Promise<void> => {
      for (const i of names) {
        const bytes = randomBytes(20_000 + i)
        files.set(`s${i}.txt`, bytes)
        await writeFile(join(kept, `s${i}.txt`), bytes)
      }
    }
    await write([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    await ok(['snapshot', '--config', a.config], { env: { ...ENV, CIDSYNC_TEST_CLOCK: at(1) } })
    for (const h of [2, 3]) {
      await write([0, 1, 2, 3, 4, 5, 6, 7])
      await ok(['snapshot', '--config', a.config], { env: { ...ENV, CIDSYNC_TEST_CLOCK: at(h) } })
    }
    const atThree = new Map(files)
    await ok(['forget', '--config', a.config], { env: ENV })
    const rewrote = JSON.parse((await ok(['prune', '--json', '--config', a.config], { env: ENV })).stdout) as { repacked?: { made: number } }
    expect(rewrote.repacked?.made).toBe(1)
    await ok(['snapshot', '--config', a.config], { env: { ...ENV, CIDSYNC_TEST_CLOCK: at(4) } })
    // The forget links the kept publishes anew: its head is the pointer the mirror must reach.
    const { head } = JSON.parse((await ok(['forget', '--json', '--config', a.config], { env: ENV })).stdout) as { head: string }
    const pruned = JSON.parse((await ok(['prune', '--json', '--config', a.config], { env: ENV })).stdout) as { deleted: { content: number } }
    expect(pruned.deleted.content).toBeGreaterThan(0)

    await ok(['login', '--config', a.config, '--mirror', 'usb'])
    await mirrorCatchesUp(a, head)
    const store = await DirectoryObjectStore.open(usb)
    const deleted = new Set(logged(a.state, 'delete'))
    for (const cid of logged(a.state, 'object')) expect(await store.has(cid), cid).toBe(!deleted.has(cid))
    // The publish of 03:00 names the old pack; the mirror has only the new one, and the newer record finds it.
    // Asked at 03:30: the test clock runs on from 03:00, so the publish may be stamped just after it.
    const to = join(root, 'from-usb')
    const got = await runCli(['get', ...[...atThree.keys()].map(n => `kept/${n}`), '--from', 'usb', '--at', `${at(3).slice(0, 13)}:30:00.000Z`, '--to', to, '--config', a.config], { env: ENV, timeoutMs: 120_000 })
    expect(got.code, got.stderr).toBe(0)
    for (const [name, bytes] of atThree) expect((await readFile(join(to, 'kept', name))).equals(bytes), name).toBe(true)
  }, 300_000)
})

