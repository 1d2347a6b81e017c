// npm run bench [-- cid|index|service|snapshot|sync|find|upload|content|lean|exits|retention|retention-listing|all]: each figure beside a baseline measured in the same run, as a ratio.
// Runs the built code (dist/); writes its data under $BENCH_DIR (default: the OS temp dir) and removes it.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir, cpus, totalmem } from 'node:os'
import { join } from 'node:path'
import { benchCid } from './cid-bench.mjs'
import { benchIndex } from './index-bench.mjs'
import { benchService } from './service-bench.mjs'
import { benchSnapshot } from './snapshot-bench.mjs'
import { benchSync } from './sync-bench.mjs'
import { benchFind } from './find-bench.mjs'
import { benchUpload } from './upload-bench.mjs'
import { benchContent } from './content-bench.mjs'
import { benchLean } from './lean-bench.mjs'
import { benchExits } from './exits-bench.mjs'
import { benchRetention, SCALE as RETENTION_SCALE } from './retention-bench.mjs'
import { benchYear } from './retention-year.mjs'
import { benchRetentionListing } from './retention-listing.mjs'

const which = process.argv[2] ?? 'all'
const root = await mkdtemp(join(process.env.BENCH_DIR ?? tmpdir(), 'cidsync-bench-'))
const rows = []
const report = (name, value, baseline, ratio, target) => {
  rows.push({ name, value, baseline, ratio, target })
  console.log(`${name}: ${value} | baseline ${baseline} | ${ratio} | target ${target}`)
}

console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}, ${process.platform}`)
try {
  if (which === 'all' || which === 'cid') await benchCid(root, report)
  if (which === 'all' || which === 'index') await benchIndex(root, report)
  if (which === 'all' || which === 'service') await benchService(root, report)
  if (which === 'all' || which === 'snapshot') await benchSnapshot(root, report)
  if (which === 'all' || which === 'sync') await benchSync(root, report)
  if (which === 'all' || which === 'find') await benchFind(root, report)
  if (which === 'all' || which === 'upload') await benchUpload(root, report)
  if (which === 'all' || which === 'content') await benchContent(root, report)
  if (which === 'all' || which === 'lean') await benchLean(root, report)
  if (which === 'all' || which === 'exits') await benchExits(root, report)
  if (which === 'all' || which === 'retention') await benchRetention(root, report)
  // The large listing alone, without the history the rest of the retention bench builds first.
  if (which === 'retention-listing') await benchRetentionListing(root, report)
  // The simulated year alone: the content held by month, and the reads after it.
  if (which === 'retention-year') await benchYear(root, report, RETENTION_SCALE)
  if (which === 'all' || which === 'exits' || which === 'mirrors') await (await import('./mirrors-bench.mjs')).benchMirrors(root, report)
} finally {
  // BENCH_KEEP=1 leaves the data for a profile of one command on it.
  if (process.env.BENCH_KEEP === '1') console.log(`kept: ${root}`)
  else await rm(root, { recursive: true, force: true })
}
console.log('\n| measure | cidsync | baseline | ratio | target |\n|---|---|---|---|---|')
for (const r of rows) console.log(`| ${r.name} | ${r.value} | ${r.baseline} | ${r.ratio} | ${r.target} |`)
