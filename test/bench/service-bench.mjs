import { spawn } from 'node:child_process'
import { createReadStream, createWriteStream, statSync } from 'node:fs'
import { createServer, request as httpRequest } from 'node:http'
import { pipeline } from 'node:stream/promises'
import { createHash, randomUUID } from 'node:crypto'
import { rssOf, writeStreamFile } from './data.mjs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { request } from 'undici'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { create as digestOf } from 'multiformats/hashes/digest'
import { createServiceClients } from '../../dist/remote/index.js'
import { cidProfile } from '../../dist/content/index.js'
import { newWalletKey } from '../../dist/crypto/index.js'

/** A real CID for record `i`: the listing refuses a record whose CID does not parse. */
const recordCid = (i) => CID.createV1(raw.code, digestOf(0x12, createHash('sha256').update(String(i)).digest())).toString()

const CLI = fileURLToPath(new URL('../../dist/bin/cidsync.js', import.meta.url))
const RECORDS = Number(process.env.BENCH_RECORDS ?? 100_000)
const PAGE = 2000
const MIB = 1024 * 1024
const BIG = Number(process.env.BENCH_SERVICE_MIB ?? 1024) * MIB

/** Samples the peak RSS of some processes while `fn` runs. */
async function peakRss (pids, fn) {
  const peaks = pids.map(() => 0)
  const timer = setInterval(() => pids.forEach((pid, i) => { peaks[i] = Math.max(peaks[i], rssOf(pid)) }), 50)
  const started = performance.now()
  try {
    const result = await fn()
    return { ms: performance.now() - started, peaks, result }
  } finally {
    clearInterval(timer)
  }
}

async function startService (dir, pageSize) {
  const child = spawn(process.execPath, [CLI, 'local-service', '--dir', dir, '--page-size', String(pageSize)], { stdio: ['ignore', 'pipe', 'ignore'] })
  const url = await new Promise((resolve, reject) => {
    child.stdout.once('data', d => resolve(d.toString().trim()))
    child.once('exit', code => reject(new Error(`local-service exited ${code}`)))
  })
  return { child, url, stop: async () => { child.removeAllListeners('exit'); const done = new Promise(r => child.once('exit', r)); child.kill('SIGTERM'); await done } }
}

/** A plain loopback HTTP server that swallows PUTs and serves one file for GETs: the baseline. */
async function plainServer (file) {
  const server = createServer((req, res) => {
    if (req.method === 'PUT') { req.resume(); req.on('end', () => res.end('ok')); return }
    res.writeHead(200, { 'content-length': statSync(file).size })
    createReadStream(file, { highWaterMark: MIB }).pipe(res)
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise(resolve => server.close(resolve)) }
}

const seconds = ms => `${(ms / 1000).toFixed(2)} s`
const mbps = (bytes, ms) => `${(bytes / MIB / (ms / 1000)).toFixed(0)} MiB/s`
const mb = bytes => `${(bytes / 1e6).toFixed(0)} MB`

export async function benchService (root, report) {
  const service = await startService(join(root, 'service'), PAGE)
  const credentials = {}
  const url = service.url
  const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => credentials.apiKey, sessionToken: () => undefined })
  try {
    const login = await clients.deals.login(newWalletKey())
    credentials.apiKey = login.apiKey
    // The records go straight into the service's database: the listing is what is measured.
    const db = new Database(join(root, 'service', 'service.sqlite'))
    const insert = db.prepare('INSERT INTO files (id, address, cid, file_name, mime_type, size, sent_for_deal, created_at, last_update) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
    db.transaction(() => {
      for (let i = 0; i < RECORDS; i++) insert.run(randomUUID(), login.address, recordCid(i), `file-${i}.bin`, 'application/octet-stream', 4096 + i, i % 2 === 0 ? 'yes' : '', 1_700_000_000_000 + i, 1_700_000_000_000 + i)
    })()
    db.close()

    const plain = await peakRss([process.pid], async () => {
      let lastKey = 'null'
      let count = 0
      for (;;) {
        const answer = await request(`${url}/api/user/files_uploaded?lastKey=${lastKey}`, { headers: { authorization: `Bearer ${credentials.apiKey}` } })
        const page = await answer.body.json()
        count += page.fileList.length
        if (page.fileList.length === 0 || count >= page.totalFiles) break
        lastKey = page.fileList.at(-1).id
      }
      return count
    })
    const before = process.memoryUsage().rss
    const listed = await peakRss([process.pid], async () => { let n = 0; for await (const _ of clients.files()) n++; return n })
    if (listed.result !== RECORDS || plain.result !== RECORDS) throw new Error(`listed ${listed.result} and ${plain.result}, expected ${RECORDS}`)
    report(`list ${RECORDS.toLocaleString('en-US')} records, pages of ${PAGE} (cidsync files client)`, seconds(listed.ms), `plain GET + JSON.parse ${seconds(plain.ms)}`, `${(listed.ms / plain.ms).toFixed(2)}x the time`, '<= 3 s')
    report('  client RSS growth while listing', mb(Math.max(0, listed.peaks[0] - before)), '-', '-', 'flat')

    const file = join(root, 'big.bin')
    writeStreamFile(file, BIG, 2)
    const baseline = await plainServer(file)
    try {
      const put = await peakRss([process.pid], async () => {
        const answer = await request(`${baseline.url}/`, { method: 'PUT', body: createReadStream(file, { highWaterMark: MIB }) })
        await answer.body.dump()
      })
      const get = await peakRss([process.pid], async () => {
        const answer = await request(`${baseline.url}/`)
        await pipeline(answer.body, createWriteStream(join(root, 'plain-copy.bin')))
      })
      const profile = cidProfile('kubo-cidv1')
      const up = await peakRss([process.pid, service.child.pid], async () => await clients.objects.put(file, profile))
      const down = await peakRss([process.pid, service.child.pid], async () => await clients.gateway.fetchVerified(up.result.cid, profile, join(root, 'fetched.bin')))
      report(`upload ${BIG / MIB} MiB through the local service (CID checked)`, mbps(BIG, up.ms), `plain loopback PUT ${mbps(BIG, put.ms)}`, `${(put.ms / up.ms).toFixed(2)}x plain`, 'report')
      report('  peak RSS during upload: client / service', `${mb(up.peaks[0])} / ${mb(up.peaks[1])}`, '-', '-', '< 200 MB')
      report(`fetch ${BIG / MIB} MiB through the gateway (CID verified)`, mbps(BIG, down.ms), `plain loopback GET ${mbps(BIG, get.ms)}`, `${(get.ms / down.ms).toFixed(2)}x plain`, 'report')
      report('  peak RSS during fetch: client / service', `${mb(down.peaks[0])} / ${mb(down.peaks[1])}`, '-', '-', '< 200 MB')
    } finally {
      await baseline.close()
    }
  } finally {
    await clients.close()
    await service.stop()
  }
}
