// The retention bench over a large index without content (BENCH_RETENTION_INDEX entries, off by
// default: a million takes a few minutes here). Rows are filled in SQL as the sync bench does,
// published as a base and three deltas of 1,000 changed rows; then `cidsync forget` and `cidsync
// prune` spawned with keep_last = 1. What grows with the index shows here, not at the default scale.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pino from 'pino'
import { benchEntry, fillIndex } from './data.mjs'
import { loadConfig } from '../../dist/config/index.js'
import { connectService } from '../../dist/connect/index.js'
import { indexPath, openIndex } from '../../dist/index/index.js'
import { prepareSyncState, publish, Repository } from '../../dist/sync/index.js'
import { count, mb, seconds, timed } from './retention-tree.mjs'

const CLI = fileURLToPath(new URL('../../dist/bin/cidsync.js', import.meta.url))
const ENTRIES = Number(process.env.BENCH_RETENTION_INDEX ?? 0)
const DEVICE = 'aaaaaaaa-0000-4000-8000-000000000000'

export async function benchRetentionIndex (root, report) {
  if (ENTRIES <= 0) {
    console.log('a large index (BENCH_RETENTION_INDEX=1000000): skipped')
    return
  }
  const dir = join(root, 'retention-index')
  mkdirSync(join(dir, 'state'), { recursive: true })
  const configPath = join(dir, 'c.toml')
  writeFileSync(configPath, 'state_dir = "state"\nnamespace = "bench-index"\n[service]\nmode = "embedded"\ndir = "service"\n[snapshot]\ndeal = false\n' +
    '[status]\nlisten = "127.0.0.1:0"\n[retention]\nkeep_last = 1\nprune_margin = "0s"\n')
  const config = loadConfig({ configPath, env: {} })
  const index = openIndex(indexPath(config.stateDir))
  const { store } = await prepareSyncState(config.stateDir, {})
  const connection = await connectService(config, {}, {})
  try {
    fillIndex(index, DEVICE, ENTRIES)
    const components = { index, repository: new Repository(config, connection.clients, { store }), logger: pino({ level: 'warn' }), deviceId: DEVICE }
    await publish(components, {})
    for (let d = 1; d <= 3; d++) {
      index.entries.apply(DEVICE, Array.from({ length: 1000 }, (_, k) => ({ ...benchEntry((d * 7919 + k * 104729) % ENTRIES), size: 7 + k, mtimeMs: Date.now() })))
      await publish(components, {})
    }
  } finally {
    await connection.close()
    store.close()
    index.close()
  }
  const forget = await timed(process.execPath, [CLI, 'forget', '--config', configPath])
  const prune = await timed(process.execPath, [CLI, 'prune', '--config', configPath, '--json'])
  const pruned = JSON.parse(prune.stdout)
  console.log(`  ${count(ENTRIES)} entries: forget ${seconds(forget.ms)}, prune ${seconds(prune.ms)}; deleted ${JSON.stringify(pruned.deleted)}`)
  report(`forget + prune over ${count(ENTRIES)} entries (no content; 4 publishes to keep_last 1)`, seconds(forget.ms + prune.ms), `forget ${seconds(forget.ms)}, prune ${seconds(prune.ms)}`, '-', 'report')
  report('  peak RSS of forget / prune (anonymous part)', `${mb(forget.peak)} / ${mb(prune.peak)}`, `${mb(forget.anon)} / ${mb(prune.anon)}`, '-', '<= 300 MB')
}
