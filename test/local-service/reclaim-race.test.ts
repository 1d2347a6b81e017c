import { describe, it, expect, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { readdirSync, readlinkSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import * as raw from 'multiformats/codecs/raw'
import { startLocalService, type LocalService, type ReclaimProgress } from '../../src/local-service/index.js'
import { ServiceReclaimBusyError } from '../../src/errors.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { serviceAccount, type ServiceAccount } from '../helpers/service-account.js'
import { carOf } from '../helpers/car.js'
import { until } from '../helpers/wait.js'

const KiB = 1024

async function open (dir: string): Promise<LocalService> {
  const local = await startLocalService({ dir })
  onTestFinished(async () => { await local.stop() })
  return local
}

interface Block { readonly cid: CID, readonly bytes: Uint8Array }

async function rawBlock (size: number): Promise<Block> {
  const bytes = randomBytes(size)
  // The multipart parser holds back a tail that could begin the closing boundary ("\r\n--").
  bytes[size - 1] = 0
  return { cid: CID.createV1(raw.code, await sha256.digest(bytes)), bytes }
}

async function stored (local: LocalService, block: Block): Promise<boolean> {
  const bytes = await local.readStoredBlock(block.cid)
  return bytes !== undefined && Buffer.from(bytes).equals(block.bytes)
}

/** A dag/import whose CAR is all sent but the closing boundary: its blocks are stored, the request still runs. */
function heldImport (local: LocalService, account: ServiceAccount, car: Uint8Array): { status: Promise<number>, finish: () => void } {
  const boundary = `xreclaim${randomBytes(4).toString('hex')}x`
  const req = request(`${local.url}/api/v0/dag/import`, { method: 'POST', headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}` } })
  // 0: the connection failed (or the test ended and cut it).
  const status = new Promise<number>(resolve => {
    req.on('response', res => { res.resume(); resolve(res.statusCode ?? 0) })
    req.on('error', () => { resolve(0) })
  })
  onTestFinished(() => { req.destroy() })
  req.write(Buffer.concat([Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="x.car"\r\ncontent-type: application/octet-stream\r\n\r\n`), car]))
  return { status, finish: () => { req.end(`\r\n--${boundary}--\r\n`) } }
}

async function imported (local: LocalService, account: ServiceAccount, block: Block): Promise<void> {
  const form = new FormData()
  form.append('file', new Blob([await carOf([block.cid], [block])]), 'x.car')
  const res = await fetch(`${local.url}/api/v0/dag/import`, { method: 'POST', headers: { authorization: `Bearer ${account.apiKey}` }, body: form })
  expect(res.status).toBe(200)
}

/** Descriptors this process holds on pack files since unlinked. */
function removedPacksHeld (dir: string): number {
  return readdirSync('/proc/self/fd').filter(fd => {
    try { return readlinkSync(`/proc/self/fd/${fd}`).startsWith(join(dir, 'packs')) && readlinkSync(`/proc/self/fd/${fd}`).endsWith('(deleted)') } catch { return false }
  }).length
}

describe('a reclaim while uploads and reads go on', () => {
  it('keeps a dead block an upload found before the reclaim, and one uploaded again after it condemned it, though both are listed only after', async () => {
    const dir = await useTempDir()
    const local = await open(dir)
    const one = await serviceAccount(local, dir)
    const [early, late, dead, fresh, other] = await Promise.all([rawBlock(64 * KiB), rawBlock(64 * KiB), rawBlock(64 * KiB), rawBlock(64 * KiB), rawBlock(64 * KiB)])
    for (const block of [early, late, dead]) {
      await imported(local, one, block)
      await one.remove(block.cid.toString())
    }
    // Begun before the reclaim: finds `early` stored (dead), then waits to be listed.
    const before = heldImport(local, one, await carOf([early.cid], [early, fresh]))
    await until(async () => await stored(local, fresh) ? true : undefined, 10_000, 'the first import to store its blocks')
    const events: ReclaimProgress[] = []
    let condemned: (() => void) | undefined
    const condemning = new Promise<void>(resolve => { condemned = resolve })
    const running = local.reclaim({ onProgress: event => { events.push(event); if (event.phase === 'condemned') condemned?.() } })
    await condemning
    // Begun after: writes `late` again, and is listed only once the reclaim is done.
    const after = heldImport(local, one, await carOf([late.cid], [late, other]))
    await until(async () => await stored(local, other) ? true : undefined, 10_000, 'the second import to store its blocks')
    // The reclaim waits for the import begun before it.
    await until(() => events.slice(events.findIndex(e => e.phase === 'condemned')).some(e => e.phase === 'waiting') ? true : undefined, 10_000, 'the reclaim to wait for the first import')
    before.finish()
    expect(await before.status).toBe(200)
    const result = await running
    expect(result.blocksFreed).toBe(1)
    after.finish()
    expect(await after.status).toBe(200)
    for (const block of [early, late, fresh, other]) expect(await stored(local, block)).toBe(true)
    expect(await local.readStoredBlock(dead.cid)).toBeUndefined()
    // Read again after a second reclaim, which finds nothing more to drop.
    expect((await local.reclaim()).blocksFreed).toBe(0)
    for (const block of [early, late, fresh, other]) expect(await stored(local, block)).toBe(true)
  })

  it('lets one process reclaim at a time, and another reads and uploads on through the rewrite', async () => {
    const dir = await useTempDir()
    const a = await open(dir)
    const b = await open(dir)
    const onA = await serviceAccount(a, dir)
    const kept = randomBytes(512 * KiB)
    const keptCid = await onA.put(kept)
    await onA.remove(await onA.put(randomBytes(2 * 1024 * KiB)))
    // `b` reads from the pack, keeping its descriptor open.
    expect(await b.readStoredBlock(CID.parse(keptCid))).toBeDefined()
    let second: Promise<unknown> | undefined
    const result = await a.reclaim({ onProgress: () => { second ??= b.reclaim().then(() => 'ran', (err: unknown) => err) } })
    expect(await second).toBeInstanceOf(ServiceReclaimBusyError)
    expect(result.packsRewritten).toBe(1)
    const onB = await serviceAccount(b, dir)
    expect((await onB.get(keptCid)).equals(kept)).toBe(true)
    if (process.platform === 'linux') expect(removedPacksHeld(dir)).toBeGreaterThan(0)
    // An upload in the new epoch closes what `b` kept of the removed pack: the disk gets the space back.
    const more = randomBytes(100 * KiB)
    const moreCid = await onB.put(more)
    if (process.platform === 'linux') expect(removedPacksHeld(dir)).toBe(0)
    expect((await onA.get(moreCid)).equals(more)).toBe(true)
    expect((await onA.get(keptCid)).equals(kept)).toBe(true)
  })
})
