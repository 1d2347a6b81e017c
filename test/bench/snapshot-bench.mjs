import { createReadStream, createWriteStream, statSync, rmSync } from 'node:fs'
import { pipeline } from 'node:stream/promises'
import { createGzip, createGunzip } from 'node:zlib'
import { join } from 'node:path'
import { openIndex } from '../../dist/index/index.js'
import { writeSnapshot, readSnapshot } from '../../dist/snapshot/index.js'

const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 1_000_000)
const DEVICE = 'aaaaaaaa-0000-4000-8000-000000000000'

function makeIndex (path) {
  const index = openIndex(path)
  index.entries.registerDevice(DEVICE, 'bench')
  for (let start = 0; start < ENTRIES; start += 50_000) {
    const batch = []
    for (let i = start; i < Math.min(ENTRIES, start + 50_000); i++) {
      batch.push({ kind: 'upsert', folder: 'photos', path: `${2000 + (i % 25)}/${String(i % 1000).padStart(3, '0')}/IMG_${i}.jpg`, size: 1_000_000 + i, mtimeMs: 1_700_000_000_000 + i * 1.5, cid: `bafkreih${(i * 2654435761 % 2 ** 32).toString(36).padStart(52, 'q')}`, cidProfile: 'kubo-cidv1' })
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
    index.db.prepare('VACUUM INTO ?').run(join(root, 'copy.sqlite'))
    await pipeline(createReadStream(join(root, 'copy.sqlite'), { highWaterMark: 1 << 20 }), createGzip({ level: 6 }), createWriteStream(join(root, 'copy.gz')))
    const baseline = performance.now() - started
    started = performance.now()
    const written = await writeSnapshot({ db: index.db, stateDir: root, path: join(root, 'snapshot.bin'), encryption: 'aes-256-gcm', device: DEVICE })
    const ours = performance.now() - started
    report(`snapshot of ${ENTRIES.toLocaleString('en-US')} entries, encrypted (writeSnapshot)`, seconds(ours), `VACUUM INTO + gzip ${seconds(baseline)}`, `${(ours / baseline).toFixed(2)}x the time`, '<= 1.3x, < 10 s')
    report('  snapshot size against the raw index', `${mb(written.bytes)} of ${mb(raw)}`, `gzip ${mb(statSync(join(root, 'copy.gz')).size)}`, `${(written.bytes / raw * 100).toFixed(0)}%`, '<= 40%')

    started = performance.now()
    await pipeline(createReadStream(join(root, 'copy.gz'), { highWaterMark: 1 << 20 }), createGunzip(), createWriteStream(join(root, 'plain.sqlite')))
    const gunzip = performance.now() - started
    started = performance.now()
    await readSnapshot({ path: join(root, 'snapshot.bin'), stateDir: root, destination: join(root, 'restored.sqlite') })
    const restore = performance.now() - started
    report('  open it again (readSnapshot: decrypt, gunzip, integrity_check)', seconds(restore), `gunzip ${seconds(gunzip)}`, `${(restore / gunzip).toFixed(2)}x the time`, '<= 1.3x (fetch not included)')
  } finally {
    index.close()
    for (const f of ['copy.sqlite', 'copy.gz', 'plain.sqlite', 'restored.sqlite', 'snapshot.bin']) rmSync(join(root, f), { force: true })
  }
}
