import { describe, it, expect, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { CID } from 'multiformats/cid'
import { startLocalService } from '../../src/local-service/index.js'
import { runCli } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { packBytes, serviceAccount } from '../helpers/service-account.js'

const KiB = 1024

/** Every step a reclaim takes, in order (src/local-service/reclaim.ts, reclaim-sweep.ts, reclaim-packs.ts). */
const STEPS = ['service:reclaim-marked', 'service:reclaim-condemned', 'service:reclaim-swept', 'service:reclaim-pack-written', 'service:reclaim-pack-moved']

/** Pack files of packs marked removed that are still on disk. */
function removedPackFiles (dir: string): number[] {
  const db = new Database(join(dir, 'service.sqlite'), { readonly: true })
  try {
    const ids = db.prepare('SELECT id FROM packs WHERE removed_at IS NOT NULL').pluck().all() as number[]
    return ids.filter(id => existsSync(join(dir, 'packs', `${String(id).padStart(8, '0')}.pack`)))
  } finally {
    db.close()
  }
}

describe('a reclaim killed at any step (kill -9), while the service runs', () => {
  it.each(STEPS)('at %s: every live block reads back whole, and the next run finishes', async step => {
    const dir = await useTempDir()
    const local = await startLocalService({ dir })
    onTestFinished(async () => { await local.stop() })
    const one = await serviceAccount(local, dir)
    const kept = randomBytes(512 * KiB)
    const keptCid = await one.put(kept)
    const gone = randomBytes(2 * 1024 * KiB)
    const goneCid = await one.put(gone)
    await one.remove(goneCid)

    const killed = await runCli(['local-service', 'reclaim', '--dir', dir], { env: { ...process.env, CIDSYNC_FAILPOINT: step } })
    expect(killed.signal, killed.stderr).toBe('SIGKILL')
    // Whatever the kill left, the running service reads and takes uploads.
    expect((await one.get(keptCid)).equals(kept)).toBe(true)
    const more = randomBytes(200 * KiB)
    const moreCid = await one.put(more)

    await local.reclaim()
    for (const [cid, bytes] of [[keptCid, kept], [moreCid, more]] as const) expect((await one.get(cid)).equals(bytes)).toBe(true)
    expect(await local.readStoredBlock(CID.parse(goneCid))).toBeUndefined()
    expect(removedPackFiles(dir)).toEqual([])
    expect(packBytes(dir)).toBeLessThan(kept.length + more.length + 64 * KiB)
    expect(await one.used()).toBe(kept.length + more.length)
    // Done: a run more finds nothing to do.
    expect(await local.reclaim()).toMatchObject({ blocksFreed: 0, uploadsForgotten: 0, packsRewritten: 0, packsRemoved: 0 })
  })
})
