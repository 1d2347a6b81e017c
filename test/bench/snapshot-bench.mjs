import { createReadStream, createWriteStream, statSync, rmSync } from 'node:fs'
import { pipeline } from 'node:stream/promises'
import { createGzip, createGunzip } from 'node:zlib'
import { join } from 'node:path'
import { checkIndexFile, openIndex } from '../../dist/index/index.js'
import { writeSnapshot, readSnapshot } from '../../dist/snapshot/index.js'
import { fileCid, cidProfile } from '../../dist/content/index.js'
import { startLocalService } from '../../dist/local-service/index.js'
import { createServiceClients } from '../../dist/remote/index.js'
import { newWalletKey } from '../../dist/crypto/index.js'
import { request } from 'undici'
import { benchEntry } from './data.mjs'

const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 1_000_000)
const DEVICE = 'aaaaaaaa-0000-4000-8000-000000000000'

function makeIndex (path) {
  const index = openIndex(path)
  index.entries.registerDevice(DEVICE, 'bench')
  for (let start = 0; start < ENTRIES; start += 50_000) {
    const batch = []
    for (let i = start; i < Math.min(ENTRIES, start + 50_000); i++) {
      batch.push(benchEntry(i))
    }
    index.entries.apply(DEVICE, batch)
  }
  index.db.pragma('wal_checkpoint(TRUNCATE)')
  return index
}

const seconds = ms => `${(ms / 1000).toFixed(2)} s`
const mb = bytes => `${(bytes / 1e6).toFixed(0)} MB`

export async function benchSnapshot (root, report) {
  const index = makeIndex(join(root, 'index.sqlite'))
  const raw = statSync(join(root, 'index.sqlite')).size
  try {
    // Baseline: VACUUM INTO, then gzip (level 6) of the copy.
    let started = performance.now()
    index.copyTo(join(root, 'copy.sqlite'))
    await pipeline(createReadStream(join(root, 'copy.sqlite'), { highWaterMark: 1 << 20 }), createGzip({ level: 6 }), createWriteStream(join(root, 'copy.gz')))
    const baseline = performance.now() - started
    started = performance.now()
    const written = await writeSnapshot({ index, stateDir: root, path: join(root, 'snapshot.bin'), encryption: 'aes-256-gcm', device: DEVICE })
    const { cid } = await fileCid(join(root, 'snapshot.bin'), cidProfile('kubo-cidv1'))
    const ours = performance.now() - started
    report(`snapshot of ${ENTRIES.toLocaleString('en-US')} entries, encrypted, with its CID`, seconds(ours), `VACUUM INTO + gzip ${seconds(baseline)}`, `${(ours / baseline).toFixed(2)}x the time`, '<= 1.3x, < 10 s')
    report('  snapshot size against the raw index', `${mb(written.bytes)} of ${mb(raw)}`, `gzip ${mb(statSync(join(root, 'copy.gz')).size)}`, `${(written.bytes / raw * 100).toFixed(0)}%`, '<= 40%')

    // Restore: through the local service's gateway (fetch, verify the CID, decrypt, gunzip,
    // integrity_check) beside a plain GET of the gzip file piped into gunzip.
    const service = await startLocalService({ dir: join(root, 'service') })
    const creds = {}
    const url = service.url
    const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => creds.apiKey, sessionToken: () => undefined })
    try {
      creds.apiKey = (await clients.deals.login(newWalletKey())).apiKey
      await clients.objects.put(join(root, 'snapshot.bin'), cidProfile('kubo-cidv1'))
      const gz = await clients.objects.put(join(root, 'copy.gz'), cidProfile('kubo-cidv1'))
      started = performance.now()
      const plain = await request(`${url}/ipfs/${gz.cid}`)
      await pipeline(plain.body, createGunzip(), createWriteStream(join(root, 'plain.sqlite')))
      const fetchGunzip = performance.now() - started
      started = performance.now()
      await clients.gateway.fetchVerified(cid.toString(), cidProfile('kubo-cidv1'), join(root, 'fetched.bin'))
      await readSnapshot({ path: join(root, 'fetched.bin'), stateDir: root, destination: join(root, 'restored.sqlite'), check: checkIndexFile })
      const restore = performance.now() - started
      report('  restore it (gateway fetch, verify, decrypt, gunzip, integrity_check)', seconds(restore), `fetch + gunzip ${seconds(fetchGunzip)}`, `${(restore / fetchGunzip).toFixed(2)}x the time`, '<= 1.3x, < 10 s')
    } finally {
      await clients.close()
      await service.stop()
    }
  } finally {
    index.close()
    for (const f of ['copy.sqlite', 'copy.gz', 'plain.sqlite', 'restored.sqlite', 'snapshot.bin', 'fetched.bin', 'service']) rmSync(join(root, f), { force: true, recursive: true })
  }
}
