import { describe, expect, it } from 'vitest'
import { EXTERNAL } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { ok } from './content-devices.js'
import { mostlyDeadPack, recordObjects } from './repack-devices.js'
import { loadConfig } from '../../src/config/index.js'
import { indexPath, openIndex, readDeviceId } from '../../src/index/index.js'
import { prune, Repository, SyncStore } from '../../src/sync/index.js'

/**
 * `cidsync prune` plans from a read-only index and claims the state dir only to write. Another
 * prune (here: a `cidsync prune` run between this one's plan and its claim) may have rewritten the
 * same packs meanwhile. recordMoved then records nothing, but the stale plan was still carried out.
 */
describe.skipIf(EXTERNAL)('a repack whose plan went stale before its claim', () => {
  it('uploads no copy nobody names, and counts nothing as rewritten', async () => {
    const root = await useTempDir()
    const { a, service, pack } = await mostlyDeadPack(root)
    const config = loadConfig({ configPath: a.config, env: a.env })
    const store = new SyncStore(a.state)
    const repository = new Repository(config, service.clients, { store })
    const deviceId = readDeviceId(a.state) as string
    const readonly = openIndex(indexPath(a.state), { readonly: true })
    const listed = async (): Promise<Set<string>> => { const all = new Set<string>(); for await (const o of service.clients.objects.list()) all.add(o.cid); return all }
    let between: Set<string> | undefined
    try {
      const pruned = await prune(repository, {
        marginMs: 0,
        now: new Date(),
        repack: {
          index: readonly, deviceId, hostname: 'a',
          claim: async () => {
            // Another prune, between this one's plan and its claim: it rewrites the same pack.
            await ok(a, ['prune'])
            between = await listed()
            const writable = openIndex(indexPath(a.state))
            return { index: writable, release: () => { writable.close() } }
          }
        }
      })
      expect([...recordObjects(a).values()]).not.toContain(pack)
      const after = await listed()
      const orphans = [...after].filter(c => !(between as Set<string>).has(c))
      // The same blobs in the same order make the same pack (convergent): no orphan here. But the
      // run counts a pack rewritten though it moved no record, and status counts it waiting twice.
      const waiting = store.retention.prunePlan()?.repack?.waiting
      expect({ made: pruned.repacked?.made, packs: pruned.repacked?.packs, blobs: pruned.repacked?.blobs, orphans, waiting }).toEqual({ made: 0, packs: 0, blobs: 0, orphans: [], waiting: 1 })
    } finally {
      readonly.close()
      store.close()
      await repository.close()
    }
  }, 300_000)
})
