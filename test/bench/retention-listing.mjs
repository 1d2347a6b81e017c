// The retention bench over a large uploads listing (BENCH_RETENTION_LISTING records, off by default).
// The local service runs as its own process, pages of 2,000, its records filled in SQL. A twentieth
// of them are deleted in batches of 500, as a prune deletes. Beside it, in the same run: a delete
// that walks the whole listing each batch (a `deleteMany` told nothing), against one walk of
// `list` whose uploads each batch is handed (`seen`), as a prune does now.
import { spawn } from 'node:child_process'
import { createHash, randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { createServiceClients } from '../../dist/remote/index.js'
import { newWalletKey } from '../../dist/crypto/index.js'
import { seconds } from './retention-tree.mjs'

const CLI = fileURLToPath(new URL('../../dist/bin/cidsync.js', import.meta.url))
const RECORDS = Number(process.env.BENCH_RETENTION_LISTING ?? 0)
const BATCH = 500
const EVERY = 20

async function seededService (dir) {
  const child = spawn(process.execPath, [CLI, 'local-service', '--dir', dir, '--page-size', '2000'], { stdio: ['ignore', 'pipe', 'ignore'] })
  const url = await new Promise((resolve, reject) => {
    child.stdout.once('data', d => resolve(d.toString().trim()))
    child.once('exit', code => reject(new Error(`local-service exited ${code}`)))
  })
  const credentials = {}
  const clients = createServiceClients({ dealUrl: url, apiUrl: url, pointerUrl: url, uploadUrl: url, gateways: [url] }, { apiKey: () => credentials.apiKey, sessionToken: () => undefined })
  const login = await clients.deals.login(newWalletKey())
  credentials.apiKey = login.apiKey
  const db = new Database(join(dir, 'service.sqlite'))
  const insert = db.prepare('INSERT INTO files (id, address, cid, file_name, mime_type, size, sent_for_deal, created_at, last_update) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
  const dead = []
  db.transaction(() => {
    for (let i = 0; i < RECORDS; i++) {
      // A real CID: the listing skips a record whose CID is not one.
      const cid = CID.createV1(0x55, Digest.create(0x12, createHash('sha256').update(`record ${i}`).digest())).toString()
      if (i % EVERY === 0) dead.push(cid)
      insert.run(randomUUID(), login.address, cid, `file-${i}.bin`, 'application/octet-stream', 4096, '', 1_700_000_000_000 + i, 1_700_000_000_000 + i)
    }
  })()
  db.close()
  const stop = async () => { child.removeAllListeners('exit'); const done = new Promise(r => child.once('exit', r)); child.kill('SIGTERM'); await done }
  return { clients, dead, stop }
}

/** Deletes the dead a batch at a time, with or without the uploads one walk of `list` read; answers the time and what is left. */
async function deleteAll (dir, withWalk) {
  const { clients, dead, stop } = await seededService(dir)
  try {
    const started = performance.now()
    const storedBefore = Date.now()
    const wanted = new Set(dead)
    const uploads = new Map()
    let newestAt
    if (withWalk) {
      const onUpload = (cid, upload) => {
        if (wanted.has(cid)) uploads.set(cid, [...uploads.get(cid) ?? [], upload])
        if (upload.storedAt !== undefined) newestAt = Math.max(newestAt ?? upload.storedAt, upload.storedAt)
      }
      for await (const _ of clients.objects.list({ onUpload })) { /* the prune's one walk */ }
    }
    let removed = 0
    for (let i = 0; i < dead.length; i += BATCH) {
      const cids = dead.slice(i, i + BATCH)
      const seen = withWalk ? { seen: { uploads: new Map(cids.map(c => [c, uploads.get(c) ?? []])), newestAt } } : {}
      removed += (await clients.objects.deleteMany(cids, { storedBefore, ...seen })).removed.length
    }
    const ms = performance.now() - started
    if (removed !== dead.length) throw new Error(`removed ${removed} of ${dead.length}`)
    let left = 0
    for await (const _ of clients.objects.list()) left++
    if (left !== RECORDS - dead.length) throw new Error(`${left} left, not ${RECORDS - dead.length}`)
    return { ms, batches: Math.ceil(dead.length / BATCH), dead: dead.length }
  } finally {
    await stop()
  }
}

export async function benchRetentionListing (root, report) {
  if (RECORDS === 0) {
    console.log('a large listing (BENCH_RETENTION_LISTING=100000): skipped')
    return
  }
  const walks = await deleteAll(join(root, 'listing-walks'), false)
  const once = await deleteAll(join(root, 'listing-once'), true)
  report(`delete ${once.dead.toLocaleString('en-US')} of ${RECORDS.toLocaleString('en-US')} uploads, ${once.batches} batches of ${BATCH}, one walk of the listing`, seconds(once.ms),
    `a walk each batch ${seconds(walks.ms)}`, `${(once.ms / walks.ms).toFixed(2)}x the time`, 'report')
}
