import { describe, expect, it, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { DaemonProcess, runCli } from '../helpers/cli.js'
import { until } from '../helpers/wait.js'
import { ok, proofDir, rows, status, type Device } from '../proof/harness.js'
import { holds, mirroredDevice, publishNow, startHome, stopHome } from './mirror-helpers.js'
import { sha } from './retention-devices.js'

const ENV = { ...process.env, CIDSYNC_MIRROR_RETRY_MAX_MS: '500', CIDSYNC_MIRROR_POINTER_CHECK_MS: '300' }
const RETENTION = '[retention]\nkeep_last = 1\nprune_margin = "0s"\n'

/** The deletes logged for the mirrors, and how far the mirror's cursor is. */
function deletesAndCursor (d: Device): { deletes: Array<{ seq: number, cid: string }>, cursor: number } {
  const db = new Database(join(d.state, 'sync.sqlite'), { readonly: true })
  try {
    db.pragma('busy_timeout = 5000')
    const deletes = db.prepare("SELECT seq, cid FROM replica_log WHERE kind = 'delete' ORDER BY seq").all() as Array<{ seq: number, cid: string }>
    const cursor = (db.prepare("SELECT cursor FROM mirror_state WHERE mirror = 'nas'").pluck().get() as number | undefined) ?? 0
    return { deletes, cursor }
  } finally {
    db.close()
  }
}

describe('a mirror down while a prune runs', () => {
  it('has the deletes logged; back up, it deletes them too and restores whole', async () => {
    const root = await proofDir()
    const primary = await startHome(join(root, 'primary'))
    let mirror = await startHome(join(root, 'mirror'))
    onTestFinished(async () => { await stopHome(mirror); await stopHome(primary) })
    const d = await mirroredDevice(root, 'a', primary, mirror, RETENTION)
    const daemon = new DaemonProcess(['--config', d.config], { env: ENV })
    onTestFinished(async () => { await daemon.stop() })
    await daemon.logged('service ready', 60_000)
    const caughtUp = async (cid: string, what: string): Promise<void> => {
      await until(async () => { const m = (await status(d)).mirrors[0]; return m.objectsBehind === 0 && m.lastPublish?.cid === cid ? true : undefined }, 120_000, what, 100)
    }

    await writeFile(join(d.kept, 'same.txt'), 'the same in both\n')
    for (const n of [1, 2]) {
      const size = 2 * 1024 * 1024 + n
      await writeFile(join(d.kept, 'big.bin'), randomBytes(size))
      await until(async () => (await rows(d)).some(r => r.path === 'big.bin' && r.size === size) ? true : undefined, 30_000, `version ${n} indexed`)
      await caughtUp(await publishNow(d), `the mirror has version ${n}`)
    }
    const kept = sha(await readFile(join(d.kept, 'big.bin')))

    // The mirror goes down; the forget and prune run meanwhile.
    await stopHome(mirror)
    const forgot = JSON.parse((await ok(['forget', '--json', '--config', d.config], { env: ENV })).stdout) as { head: string }
    const pruned = await ok(['prune', '--config', d.config], { env: ENV, timeoutMs: 120_000 })
    expect(pruned.stdout).toContain('the mirror deletes the same objects as it catches up')
    const { deletes, cursor } = deletesAndCursor(d)
    expect(deletes.length).toBeGreaterThan(0)
    // Nothing of them reached the mirror: its cursor is before the first.
    expect(cursor).toBeLessThan((deletes[0] as { seq: number }).seq)

    // Back up on the same address: the copy loop applies the deletes in order, then takes the new chain.
    mirror = await startHome(join(root, 'mirror'), mirror.url)
    const last = (deletes.at(-1) as { seq: number }).seq
    await until(() => deletesAndCursor(d).cursor >= last ? true : undefined, 120_000, 'the mirror applied the deletes', 100)
    await caughtUp(forgot.head, 'the mirror moved to the forget\'s chain')
    await daemon.stop()
    // A deleted upload's blocks are served until the service reclaims them: reclaim, then look.
    await ok(['local-service', 'reclaim', '--dir', join(root, 'mirror')], { timeoutMs: 120_000 })
    for (const { cid } of deletes) expect(await holds(mirror, cid, root), `${cid} deleted on the mirror`).toBe(false)

    // The mirror alone restores the kept publish, whole.
    const verified = await runCli(['verify', '--mirror', 'nas', '--config', d.config], { env: ENV, timeoutMs: 120_000 })
    expect(verified.code, verified.stdout + verified.stderr).toBe(0)
    const back = join(root, 'back')
    await ok(['get', 'kept/big.bin', 'kept/same.txt', '--from', 'nas', '--to', back, '--config', d.config], { env: ENV, timeoutMs: 120_000 })
    expect(sha(await readFile(join(back, 'kept', 'big.bin')))).toBe(kept)
    expect(await readFile(join(back, 'kept', 'same.txt'), 'utf8')).toBe('the same in both\n')
  }, 600_000)
})
