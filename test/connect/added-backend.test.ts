import { describe, expect, it, onTestFinished } from 'vitest'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { readFrom } from '../../src/cli/mirror-read.js'
import { loadConfig } from '../../src/config/index.js'
import { registerBackend, unregisterBackend } from '../../src/store/index.js'
import { restore, SyncStoreOwner } from '../../src/sync/index.js'
import { httpGet } from '../helpers/http.js'
import { startInProcessDaemon, statusOf, untilReached } from '../helpers/in-process-daemon.js'
import { memoryBackend, memoryHomes } from '../helpers/memory-backend.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until } from '../helpers/wait.js'

/**
 * The proof that a backend is one file and one registration: a backend this test defines
 * (test/helpers/memory-backend.ts), registered here, is named by a `[[mirrors]]` table, copied
 * to by the daemon, and restored from. No file of cidsync knows of it.
 */
describe('a backend added by registering it', () => {
  it('is copied to as a [[mirrors]] table names it, and restored from', async () => {
    registerBackend(memoryBackend)
    onTestFinished(() => { unregisterBackend('memory') })
    const url = `memory://toy-${process.pid}-${Date.now()}`
    onTestFinished(() => { memoryHomes.delete(url) })
    const dir = await useTempDir()
    const { daemon, port, token, notes, config: configPath } = await startInProcessDaemon(dir, `[[mirrors]]\nname = "toy"\nurl = "${url}"\n`)
    await writeFile(join(notes, 'a.md'), 'alpha, kept in memory\n')
    await until(async () => (await statusOf(port)).index.files === 1 || undefined, 20_000, 'a.md indexed')
    // A publish asked before the daemon has reached its service is refused.
    await untilReached(port)
    const published = JSON.parse((await httpGet({ port }, '/snapshot', { method: 'POST', headers: { authorization: `Bearer ${token}` } })).body) as { cid: string }
    expect(published.cid).toMatch(/^baf/)

    // Copied: the publish's pointer is set there, once every object it needs is.
    const config = loadConfig({ configPath, env: {} })
    await until(async () => {
      const home = memoryHomes.get(url)
      return await home?.pointers.current(config.namespace, config.network).then(p => p.snapshotCid === published.cid || undefined, () => undefined)
    }, 60_000, 'the publish copied to the memory store')
    const status = (await statusOf(port)).mirrors?.find(m => m.name === 'toy')
    expect(status).toMatchObject({ name: 'toy', lastError: null })
    expect(memoryHomes.get(url)?.objects.objects.size).toBeGreaterThan(1)
    await daemon.stop()

    // Restored from it alone: every segment of the publish read from the memory store.
    const syncState = new SyncStoreOwner(config.stateDir)
    onTestFinished(() => { syncState.close() })
    const restored = await readFrom(config, { from: 'toy', fallBack: false }, async ({ repository }, where) => {
      expect(where).toBe('mirror toy')
      return await restore({ repository, syncState }, { namespace: config.namespace, network: config.network, force: true, mirror: where })
    })
    expect(restored).toMatchObject({ cid: published.cid, dryRun: false })
    expect(restored.publish.entries).toBeGreaterThanOrEqual(1)
  })
})
