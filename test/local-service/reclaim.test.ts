import { describe, it, expect, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import * as raw from 'multiformats/codecs/raw'
import * as dagCbor from '@ipld/dag-cbor'
import { z } from 'zod'
import { OPEN_POLICY, startLocalService, startLocalServiceThread, type LocalService, type LocalServiceInit, type ReclaimProgress } from '../../src/local-service/index.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { packBytes, packFiles, serviceAccount } from '../helpers/service-account.js'
import { adminClient } from '../helpers/service.js'
import { carOf } from '../helpers/car.js'
import { until } from '../helpers/wait.js'
import Database from 'better-sqlite3'
import { join } from 'node:path'

const KiB = 1024
const MiB = 1024 * KiB

async function open (dir: string, init: Partial<LocalServiceInit> = {}): Promise<LocalService> {
  const local = await startLocalService({ dir, ...init })
  onTestFinished(async () => { await local.stop() })
  return local
}

async function stored (local: LocalService, cid: string | CID): Promise<boolean> {
  return await local.readStoredBlock(typeof cid === 'string' ? CID.parse(cid) : cid) !== undefined
}

describe('the local service gives back the space of deleted uploads', () => {
  it('drops what only a deleted upload held, rewrites its pack, keeps what another upload or a pointer holds, and the quota goes down', async () => {
    const dir = await useTempDir()
    const local = await open(dir, { policy: { ...OPEN_POLICY, maxBytesPerAccount: 64 * MiB } })
    const one = await serviceAccount(local, dir)
    const two = await serviceAccount(local, dir)
    const gone = randomBytes(2 * MiB)
    const kept = randomBytes(512 * KiB)
    const shared = randomBytes(512 * KiB)
    const pointed = randomBytes(300 * KiB)
    const goneCid = await one.put(gone)
    const keptCid = await one.put(kept)
    const sharedCid = await one.put(shared)
    expect(await two.put(shared)).toBe(sharedCid)
    const pointedCid = await one.put(pointed)
    const pointer = await fetch(`${local.url}/v1/pointers`, { method: 'PUT', headers: { authorization: `Bearer ${local.issueToken(one.address)}`, 'content-type': 'application/json' }, body: JSON.stringify({ snapshotCid: pointedCid }) })
    expect(pointer.status).toBe(200)
    for (const cid of [goneCid, sharedCid, pointedCid]) await one.remove(cid)
    // Deleted, not yet reclaimed: still stored, and still counted.
    expect(await one.used()).toBe(gone.length + kept.length + shared.length + pointed.length)
    const before = packFiles(dir)
    expect(before.size).toBe(1)

    const result = await local.reclaim()
    // The 2 MiB file's eight leaves and its root; nothing else.
    expect(result).toMatchObject({ blocksFreed: 9, bytesFreed: expect.any(Number) as number, uploadsForgotten: 3, packsRewritten: 1, packsRemoved: 1 })
    expect(result.bytesFreed).toBeGreaterThan(gone.length)
    expect(await stored(local, goneCid)).toBe(false)
    expect((await one.get(keptCid)).equals(kept)).toBe(true)
    expect((await two.get(sharedCid)).equals(shared)).toBe(true)
    expect((await one.get(pointedCid)).equals(pointed)).toBe(true)
    // The old pack's file is gone; what is left holds the live bytes alone.
    const after = packFiles(dir)
    for (const name of before.keys()) expect(after.has(name)).toBe(false)
    expect(packBytes(dir)).toBeLessThan(kept.length + shared.length + pointed.length + 16 * KiB)
    expect(result.diskBytesFreed).toBeGreaterThan(gone.length)
    expect(await one.used()).toBe(kept.length)
    expect(await two.used()).toBe(shared.length)

    const again = await local.reclaim()
    expect(again).toMatchObject({ blocksFreed: 0, uploadsForgotten: 0, packsRewritten: 0, packsRemoved: 0 })
    expect((await one.get(keptCid)).equals(kept)).toBe(true)
  })

  it('keeps a block a live dag-cbor node links to, though its own upload was deleted', async () => {
    const dir = await useTempDir()
    const local = await open(dir)
    const one = await serviceAccount(local, dir)
    const leaf = randomBytes(64 * KiB)
    const leafCid = CID.createV1(raw.code, await sha256.digest(leaf))
    const node = dagCbor.encode({ name: 'holder', link: leafCid })
    const nodeCid = CID.createV1(dagCbor.code, await sha256.digest(node))
    const form = new FormData()
    form.append('file', new Blob([await carOf([nodeCid], [{ cid: nodeCid, bytes: node }, { cid: leafCid, bytes: leaf }])]), 'x.car')
    const imported = await fetch(`${local.url}/api/v0/dag/import`, { method: 'POST', headers: { authorization: `Bearer ${one.apiKey}` }, body: form })
    expect(imported.status).toBe(200)
    // The import lists both: the raw leaf is linked by no dag-pb node.
    await one.remove(leafCid.toString())
    expect((await local.reclaim()).blocksFreed).toBe(0)
    expect(await stored(local, leafCid)).toBe(true)
    await one.remove(nodeCid.toString())
    expect((await local.reclaim()).blocksFreed).toBe(2)
    expect(await stored(local, leafCid)).toBe(false)
    expect(await stored(local, nodeCid)).toBe(false)
  })

  it('reclaims in the service\'s own thread, as the embedded daemon runs it, telling its progress', async () => {
    const dir = await useTempDir()
    const thread = await startLocalServiceThread({ dir })
    onTestFinished(async () => { await thread.stop() })
    const one = await serviceAccount(thread, dir)
    await one.put(randomBytes(100 * KiB))
    await one.remove(await one.put(randomBytes(300 * KiB)))
    const heard: ReclaimProgress[] = []
    expect(await thread.reclaim({ onProgress: progress => { heard.push(progress) } })).toMatchObject({ blocksFreed: 3, uploadsForgotten: 1, packsRewritten: 1 })
    expect(heard.map(p => p.phase)).toEqual(expect.arrayContaining(['marking', 'condemned', 'sweeping', 'packing']))
  })

  it('answers the admin route with what it freed, and runs on its own after a delete when given a delay', async () => {
    const dir = await useTempDir()
    const lines: string[] = []
    const local = await open(dir, { admin: true, reclaimAfterDeleteMs: 20, log: line => { lines.push(line) } })
    const one = await serviceAccount(local, dir)
    const first = await one.put(randomBytes(300 * KiB))
    const second = await one.put(randomBytes(300 * KiB))
    await one.remove(first)
    await until(() => lines.find(line => line.startsWith('reclaimed 3 blocks')), 10_000, 'the reclaim after the delete')
    expect(await stored(local, first)).toBe(false)
    await until(() => local.reclaimIdle ? true : undefined, 10_000, 'the scheduled reclaim to end')
    expect(await stored(local, second)).toBe(true)
    const answer = await adminClient(local).json({ method: 'POST', path: '/local/reclaim' }, z.object({ blocksFreed: z.number(), packsRemoved: z.number() }).passthrough())
    expect(answer.blocksFreed).toBe(0)
  })

  it('says why a reclaim of its own failed, and tries again later: here while another process held the reclaim lock', async () => {
    const dir = await useTempDir()
    const lines: string[] = []
    const local = await open(dir, { reclaimAfterDeleteMs: 20, log: line => { lines.push(line) } })
    const one = await serviceAccount(local, dir)
    const first = await one.put(randomBytes(300 * KiB))
    // Another process reclaiming: the lock it holds, as `local-service reclaim` holds it.
    const lock = new Database(join(dir, 'reclaim.lock'), { timeout: 0 })
    onTestFinished(() => { if (lock.open) lock.close() })
    lock.pragma('locking_mode = EXCLUSIVE')
    lock.exec('BEGIN EXCLUSIVE')
    await one.remove(first)
    await until(() => lines.find(line => line.includes('(ERR_SERVICE_RECLAIM_BUSY)')), 10_000, 'the failed reclaim said')
    expect(await stored(local, first)).toBe(true)
    lock.close()
    await until(() => lines.find(line => line.startsWith('reclaimed 3 blocks')), 10_000, 'the reclaim tried again')
    expect(await stored(local, first)).toBe(false)
  })
})
