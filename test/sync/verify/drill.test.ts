import { describe, it, expect } from 'vitest'
import { join } from 'node:path'
import type { ServiceClients } from '../../../src/remote/index.js'
import { restorableStatus, runDrill, SNAPSHOT_PROFILE, SyncStore } from '../../../src/sync/index.js'
import { ENGINE, FORMAT_VERSION, seal } from '../../../src/snapshot/index.js'
import { CidsyncError } from '../../../src/errors.js'
import { localServiceUnderTest, EXTERNAL } from '../../helpers/service.js'
import { useTempDir } from '../../helpers/temp-dir.js'
import { repositoryOf, syncDevice, writeRows as write, type SyncDevice } from '../../helpers/sync-device.js'
import { logger, manifestOf, pub } from '../v2-helpers.js'

const A = 'aaaaaaaa-0000-4000-8000-000000000000'
const B = 'bbbbbbbb-0000-4000-8000-000000000000'

/** Seals a manifest as a forger with the key would, uploads it and puts it behind the pointer. */
async function forgeManifest (clients: ServiceClients, d: SyncDevice, namespace: string, manifest: unknown): Promise<string> {
  const path = join(d.config.stateDir, 'forged.manifest')
  await seal({ path, header: { format: FORMAT_VERSION, engine: ENGINE, kind: 'manifest', compression: 'br' }, body: { bytes: Buffer.from(JSON.stringify(manifest)) }, encryption: 'aes-256-gcm', stateDir: d.config.stateDir })
  const { cid } = await clients.objects.put(path, SNAPSHOT_PROFILE)
  await clients.pointers.put({ snapshotCid: cid, engine: ENGINE, namespace, network: d.config.network, memories: 1 })
  return cid
}

describe.skipIf(EXTERNAL)('restore drills in status', () => {
  it('a drill that fails for any reason (a forged manifest naming one segment for two devices) is a failed drill, with a coded error', async () => {
    const root = await useTempDir()
    const { clients } = await localServiceUnderTest({ dir: join(root, 'service') })
    const NS = 'drill-any-failure'
    const a = await syncDevice(root, 'a', A, { namespace: NS })
    write(a, 'one.md', 'two.md')
    const { cid } = await pub(a, clients)
    const store = new SyncStore(a.config.stateDir)
    try {
      const components = { index: a.index, logger, deviceId: a.id, repository: repositoryOf({ config: a.config, store }, clients) }
      expect((await runDrill(components)).restorable).toBe(true)
      expect(restorableStatus(store)).toMatchObject({ ok: true, cid })

      const real = await manifestOf(clients, a, cid)
      const device = real.devices[0] as typeof real.devices[number]
      const forgedCid = await forgeManifest(clients, a, NS, { ...real, previous: cid, devices: [device, { ...device, deviceId: B }] })
      const outcome = await runDrill(components).then(result => result, (err: unknown) => err)
      const status = restorableStatus(store)
      expect(status).toMatchObject({ ok: false, cid: forgedCid })
      expect(status?.failed).toContain(forgedCid)
      if (outcome instanceof Error) {
        // Never a raw SQLite error: a code and what to do.
        expect(outcome).toBeInstanceOf(CidsyncError)
        expect((outcome as CidsyncError).code).toMatch(/^ERR_/)
        expect(outcome.message).not.toMatch(/^no such table/)
      } else {
        expect(outcome).toMatchObject({ restorable: false, cid: forgedCid })
      }
    } finally {
      store.close()
    }
  })
})
