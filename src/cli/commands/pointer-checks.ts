import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Repository } from '../../sync/index.js'

/**
 * Refuses (throws) a CID that is not a cidsync publish this device can open: a `cidsync-sqlite/2`
 * manifest, or an older `/1` snapshot, fetched through the gateways, verified against the CID, its
 * header read and its body decrypted and checked. A pointer put by hand that named anything else
 * would stop every device's next publish. A publish bound to another chain is refused too.
 * Answers its entry count and engine.
 */
export async function checkSnapshotCid (repository: Repository, cid: string, chain: { readonly namespace?: string, readonly network?: string } = {}): Promise<{ entries: number, engine: string }> {
  const { home: clients } = repository
  const { readPublish } = await import('../../sync/index.js')
  const dir = await mkdtemp(join(tmpdir(), 'cidsync-check-'))
  try {
    const nothingCached = { get: () => undefined, put: () => {} }
    // Bound to the chain the pointer is set for: a publish of another namespace is refused.
    const fetch = repository.readContext('check', { dir, namespace: chain.namespace, network: chain.network })
    const publish = await readPublish(clients, cid, nothingCached, fetch)
    if (publish.manifest === undefined) {
      // A `/1` header is readable without the key: open the whole file to prove this device can.
      const { SNAPSHOT_PROFILE } = await import('../../sync/index.js')
      const { readSnapshot } = await import('../../snapshot/index.js')
      const { checkIndexFile } = await import('../../index/index.js')
      await clients.objects.getFile(cid, SNAPSHOT_PROFILE, join(dir, 'snapshot'))
      await readSnapshot({ path: join(dir, 'snapshot'), stateDir: fetch.stateDir, destination: join(dir, 'index.sqlite'), passphrase: fetch.passphrase, acceptUnencrypted: fetch.acceptUnencrypted, check: checkIndexFile })
    }
    return { entries: publish.entry.entries, engine: publish.entry.engine }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
