import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { writeStreamFile } from './data.mjs'
import { join } from 'node:path'
import { availableParallelism } from 'node:os'
import { importer } from 'ipfs-unixfs-importer'
import { fixedSize } from 'ipfs-unixfs-importer/chunker'
import { balanced } from 'ipfs-unixfs-importer/layout'
import { cidProfile, fileCidSync, fileCid } from '../../dist/content/index.js'
import { HashPool } from '../../dist/watch/index.js'

const MIB = 1024 * 1024
const SIZE = Number(process.env.BENCH_CID_MIB ?? 512) * MIB
const RUNS = 3

async function best (fn) {
  let fastest = Infinity
  let result
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now()
    result = await fn()
    fastest = Math.min(fastest, performance.now() - started)
  }
  return { ms: fastest, result }
}

async function sha256File (path) {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(path, { highWaterMark: MIB })) hash.update(chunk)
  return hash.digest('hex')
}

async function importerCid (path, profile) {
  const blockstore = { put: async (cid) => cid, get: async () => { throw new Error('unused') }, has: async () => false }
  let root
  for await (const entry of importer([{ content: createReadStream(path, { highWaterMark: MIB }) }], blockstore, {
    cidVersion: profile.cidVersion, rawLeaves: profile.rawLeaves, reduceSingleLeafToSelf: true,
    chunker: fixedSize({ chunkSize: profile.chunkSize }), layout: balanced({ maxChildrenPerNode: profile.maxLinks })
  })) root = entry.cid.toString()
  return root
}

const mbps = (ms) => `${(SIZE / MIB / (ms / 1000)).toFixed(0)} MiB/s`

export async function benchCid (root, report) {
  const path = join(root, 'big.bin')
  writeStreamFile(path, SIZE)
  const profile = cidProfile('kubo-cidv1')
  await sha256File(path) // page cache warm for everyone
  const sha = await best(() => sha256File(path))
  const sync = await best(() => fileCidSync(path, profile).cid.toString())
  const async = await best(async () => (await fileCid(path, profile)).cid.toString())
  const single = new HashPool({ workers: 1 })
  const oneThread = await best(async () => (await single.hash(path, 'kubo-cidv1', { sizeHint: SIZE })).cid)
  await single.close()
  const pool = new HashPool() // one thread per core, as the daemon and `cidsync cid` run it
  const pooled = await best(async () => (await pool.hash(path, 'kubo-cidv1', { sizeHint: SIZE })).cid)
  await pool.close()
  const imported = await best(() => importerCid(path, profile))
  const results = [imported, sync, async, oneThread, pooled].map(r => r.result)
  if (new Set(results).size !== 1) throw new Error(`CIDs disagree: ${results.join(' / ')}`)
  const label = `CID of ${SIZE / MIB} MiB, kubo-cidv1`
  const threads = availableParallelism()
  report(`${label}, hashing pool (${threads} threads, the daemon's path)`, mbps(pooled.ms), `sha256 ${mbps(sha.ms)}`, `${(sha.ms / pooled.ms).toFixed(2)}x sha256`, '>= 0.8x')
  report(`${label}, hashing pool vs ipfs-unixfs-importer`, mbps(pooled.ms), `importer ${mbps(imported.ms)}`, `${(imported.ms / pooled.ms).toFixed(2)}x importer`, '>= 1.3x')
  report(`${label}, one hashing thread`, mbps(oneThread.ms), `sha256 ${mbps(sha.ms)}`, `${(sha.ms / oneThread.ms).toFixed(2)}x sha256`, 'report')
  report(`${label}, one hashing thread vs ipfs-unixfs-importer`, mbps(oneThread.ms), `importer ${mbps(imported.ms)}`, `${(imported.ms / oneThread.ms).toFixed(2)}x importer`, 'report')
  report(`${label}, main thread, async reads (fileCid)`, mbps(async.ms), `sha256 ${mbps(sha.ms)}`, `${(sha.ms / async.ms).toFixed(2)}x sha256`, 'report')
}
