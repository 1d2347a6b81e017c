import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Config } from '../../config/index.js'
import type { ServiceClients } from '../../remote/index.js'

/**
 * Refuses (throws) a CID that is not a cidsync snapshot this device can open: fetched through the
 * gateways, verified against the CID, its header read and the body decrypted and checked. A
 * pointer put by hand that named anything else would stop every device's next publish.
 */
export async function checkSnapshotCid (clients: ServiceClients, config: Config, cid: string): Promise<{ entries: number }> {
  const { SNAPSHOT_PROFILE, acceptsUnencrypted } = await import('../../sync/index.js')
  const { readSnapshot } = await import('../../snapshot/index.js')
  const dir = await mkdtemp(join(tmpdir(), 'cidsync-check-'))
  try {
    await clients.gateway.fetchVerified(cid, SNAPSHOT_PROFILE, join(dir, 'snapshot'))
    const header = await readSnapshot({ path: join(dir, 'snapshot'), stateDir: config.stateDir, destination: join(dir, 'index.sqlite'), passphrase: process.env.CIDSYNC_SNAPSHOT_PASSPHRASE, acceptUnencrypted: acceptsUnencrypted(config) })
    return { entries: header.entries }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
