import { describe, expect, it, onTestFinished } from 'vitest'
import Database from 'better-sqlite3'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startEmbedded } from '../../src/connect/embedded.js'
import { cidProfile } from '../../src/content/index.js'
import { uploadsInProcess } from '../../src/local-service/uploads-in-process.js'
import type { StoredUpload } from '../../src/store/index.js'
import { useTempDir } from '../helpers/temp-dir.js'

const PROFILE = cidProfile('kubo-cidv1')
const sleep = async (ms: number): Promise<void> => await new Promise(resolve => setTimeout(resolve, ms))

async function embedded (admin: boolean) {
  const root = await useTempDir()
  const service = await startEmbedded(join(root, 'service'), { admin })
  onTestFinished(async () => { await service.clients.close(); await service.service.stop() })
  const store = service.clients.objects
  let n = 0
  return {
    store,
    put: async (text: string): Promise<string> => {
      const path = join(root, `f${n++}.txt`)
      await writeFile(path, text)
      const cid = (await store.put(path, PROFILE)).cid
      await sleep(3)
      return cid
    },
    walk: async () => {
      const uploads = new Map<string, StoredUpload[]>()
      const listed: string[] = []
      for await (const o of store.list({ onUpload: (cid, u) => { uploads.set(cid, [...(uploads.get(cid) ?? []), u]) } })) listed.push(o.cid)
      const newestAt = Math.max(...[...uploads.values()].flat().map(u => u.storedAt ?? 0))
      return { uploads, listed, newestAt }
    }
  }
}

/** One scenario run against one store; answers what an observer sees. */
async function scenario (admin: boolean): Promise<unknown> {
  const { store, put, walk } = await embedded(admin)
  const out: unknown[] = []
  // Uploaded twice, both before the cut: all go.
  const twice = await put('twice')
  await put('twice')
  // Uploaded once before, once after the cut: stays.
  const straddle = await put('straddle')
  const once = await put('once')
  const w1 = await walk()
  const cut = Math.max(...(w1.uploads.get(once) ?? []).map(u => u.storedAt ?? 0)) + 1
  await sleep(3)
  await put('straddle')
  const fresh = await put('fresh')
  const d1 = await store.deleteMany([twice, straddle, once, fresh], { storedBefore: cut })
  out.push({ removed: [...d1.removed].sort(), refused: d1.refused })
  out.push((await walk()).listed.length)
  // The walk saw one upload of `again`; another made since stays.
  const again = await put('again')
  const w2 = await walk()
  await put('again')
  const d2 = await store.deleteMany([again], { seen: { uploads: w2.uploads, newestAt: w2.newestAt } })
  out.push({ removed: d2.removed })
  out.push(await store.has(again))
  // Both seen and storedBefore, with the cut before the walk's upload.
  const both = await put('both')
  const w3 = await walk()
  const d3 = await store.deleteMany([both], { seen: { uploads: w3.uploads, newestAt: w3.newestAt }, storedBefore: (w3.uploads.get(both)?.[0]?.storedAt ?? 0) })
  out.push({ removed: d3.removed })
  // A CID never uploaded, a repeat in the batch.
  const gone = await put('gone')
  const d4 = await store.deleteMany([gone, gone, 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'])
  out.push({ removed: d4.removed })
  out.push(await store.delete(gone))
  // seen names the object with an empty list.
  const empty = await put('empty')
  const d5 = await store.deleteMany([empty], { seen: { uploads: new Map([[empty, []]]), newestAt: undefined } })
  out.push({ removed: d5.removed }, await store.has(empty))
  const stat = await store.stat(straddle)
  out.push(stat === undefined ? 'none' : typeof stat.storedAt)
  return out
}

describe('the embedded service\'s uploads in process against its routes', () => {
  it('answer every delete as the routes do', async () => {
    const http = await scenario(true)
    const inProcess = await scenario(false)
    expect(inProcess).toStrictEqual(http)
  })
})

/**
 * A prune's batch of deletes reads (`ofCid`) before it writes (`mark`), while a daemon's service
 * thread writes the same file. A commit between the two must not make SQLite answer SQLITE_BUSY at
 * once. Here the other process is a second connection, and it commits while the batch weighs its
 * second object.
 */
describe('a prune\'s in-process delete batch beside another writer of service.sqlite', () => {
  it('deletes, instead of failing with "database is locked"', async () => {
    const root = await useTempDir()
    const dir = join(root, 'service')
    const service = await startEmbedded(dir, { admin: false })
    onTestFinished(async () => { await service.clients.close(); await service.service.stop() })
    let n = 0
    const put = async (text: string): Promise<string> => {
      const path = join(root, `f${n++}.txt`)
      await writeFile(path, text)
      const cid = (await service.clients.objects.put(path, PROFILE)).cid
      await sleep(3)
      return cid
    }
    const go = await put('an object the prune deletes')
    await sleep(5)
    const cut = Date.now()
    await sleep(5)
    // Stored after the cut: it stays, so the batch only reads before it reaches `go`.
    const young = await put('an object uploaded since the cut')

    // This prune's connection, opened as cidsync opens its files (WAL, a 5 s busy timeout).
    const mine = new Database(join(dir, 'service.sqlite'))
    mine.pragma('busy_timeout = 5000')
    // The daemon's: another connection to the same file.
    // No busy timeout: in this one thread a wait would only wait on the batch itself.
    const daemon = new Database(join(dir, 'service.sqlite'))
    daemon.pragma('busy_timeout = 0')
    onTestFinished(() => { mine.close(); daemon.close() })

    let committed = false
    class Walked extends Map<string, ReadonlySet<string>> {
      override get (cid: string): ReadonlySet<string> | undefined {
        if (cid === go && !committed) {
          committed = true
          // The daemon's service thread commits meanwhile (an upload recorded, a pointer put).
          try {
            expect(daemon.prepare("UPDATE files SET file_name = file_name || 'x' WHERE cid = ?").run(young).changes).toBe(1)
          } catch (err) {
            // The batch holds the write lock already: the daemon's process would wait for it.
            if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err
          }
        }
        return undefined
      }
    }
    const uploads = uploadsInProcess(mine, () => {})
    const removed = uploads.remove(service.address, [young, go], { storedBefore: cut, walked: new Walked() })
    expect(committed).toBe(true)
    expect(removed).toEqual([go])
  })
})
