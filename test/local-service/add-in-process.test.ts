import { describe, expect, it, onTestFinished } from 'vitest'
import { randomBytes } from 'node:crypto'
import { rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { CidBuilder, ObjectBlocksRecorder, type CidProfile, type ObjectBlocks } from '../../src/content/index.js'
import { OPEN_POLICY, startLocalServiceThread, type AddFailure } from '../../src/local-service/index.js'
import { RemoteStatusError } from '../../src/errors.js'
import { EXTERNAL, localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'

type Service = Awaited<ReturnType<typeof localServiceUnderTest>>

/** Tiny leaves and four links a node: a file of a few KiB makes a tree three levels deep. */
const PROFILE: CidProfile = { name: 'kubo-cidv1', cidVersion: 1, chunkSize: 1024, maxLinks: 4, rawLeaves: true }

/** The object's blocks named as a sealing thread names them while it writes the object. */
function named (bytes: Uint8Array): { cid: CID, blocks: ObjectBlocks } {
  const recorder = new ObjectBlocksRecorder()
  const cid = new CidBuilder(PROFILE, { onBlock: recorder.onBlock }).update(bytes).finish()
  return { cid, blocks: recorder.take() }
}

async function listed (service: Service): Promise<Array<{ cid: string, size: number }>> {
  const all: Array<{ cid: string, size: number }> = []
  for await (const record of service.clients.files()) all.push({ cid: record.cid, size: record.fileSizeInBytes })
  return all
}

async function gatewayBytes (service: Service, cid: CID): Promise<Buffer> {
  const response = await fetch(`${service.local.url}/ipfs/${cid.toString()}`)
  expect(response.status).toBe(200)
  return Buffer.from(await response.arrayBuffer())
}

function withFailpoint (value: string): void {
  const before = process.env.CIDSYNC_FAILPOINT
  process.env.CIDSYNC_FAILPOINT = value
  onTestFinished(() => { if (before === undefined) delete process.env.CIDSYNC_FAILPOINT; else process.env.CIDSYNC_FAILPOINT = before })
}

describe.skipIf(EXTERNAL)('a file added by the process the service runs in (no HTTP)', () => {
  it('stores the same CIDs and bytes as an upload over HTTP, whether its blocks come named or are hashed there, and lists it', async () => {
    const dir = await useTempDir()
    const bytes = randomBytes(21 * 1024 + 77)
    const path = join(dir, 'object.bin')
    await writeFile(path, bytes)
    const { cid, blocks } = named(bytes)
    expect(blocks.nodes.length, 'a tree with nodes above nodes').toBeGreaterThan(2)

    const overHttp = await localServiceUnderTest()
    const http = await overHttp.clients.objects.put(path, PROFILE)
    const hashedService = await localServiceUnderTest()
    const inHashed = await hashedService.local.addFile({ path, profile: PROFILE, apiKey: hashedService.apiKey })
    expect((await stat(path)).nlink, 'hashed: read, not taken').toBe(1)
    const namedService = await localServiceUnderTest()
    const inNamed = await namedService.local.addFile({ path, profile: PROFILE, apiKey: namedService.apiKey, expectedCid: cid.toString(), blocks })
    // Named blocks: the file itself taken as a pack (linked, not copied), its leaves never read.
    expect((await stat(path)).nlink, 'named: linked into the service\'s packs').toBe(2)
    await rm(path)

    expect(http.cid).toBe(cid.toString())
    expect(inNamed).toEqual({ cid: cid.toString(), size: bytes.byteLength })
    expect(inHashed).toEqual({ cid: cid.toString(), size: bytes.byteLength })
    // Every block, leaf and node, stored under the same CID with the same bytes.
    for (const c of [...blocks.leaves, ...blocks.nodes.map(([n]) => n)].map(b => CID.decode(b))) {
      const want = await overHttp.local.readStoredBlock(c)
      expect(want, c.toString()).toBeDefined()
      expect(Buffer.from(await namedService.local.readStoredBlock(c) as Uint8Array).equals(Buffer.from(want as Uint8Array)), c.toString()).toBe(true)
      expect(Buffer.from(await hashedService.local.readStoredBlock(c) as Uint8Array).equals(Buffer.from(want as Uint8Array)), c.toString()).toBe(true)
    }
    for (const s of [namedService, hashedService]) {
      expect((await gatewayBytes(s, cid)).equals(bytes)).toBe(true)
      expect(await listed(s)).toEqual(await listed(overHttp))
    }
  })

  it('hashes the file itself when the blocks named do not make the object (a leaf count that does not fit its size)', async () => {
    const dir = await useTempDir()
    const bytes = randomBytes(9 * 1024)
    const path = join(dir, 'object.bin')
    await writeFile(path, bytes)
    const { cid, blocks } = named(bytes)
    const service = await localServiceUnderTest()
    const short = { leaves: blocks.leaves.slice(1), nodes: blocks.nodes }
    expect(await service.local.addFile({ path, profile: PROFILE, apiKey: service.apiKey, expectedCid: cid.toString(), blocks: short })).toEqual({ cid: cid.toString(), size: bytes.byteLength })
    expect((await gatewayBytes(service, cid)).equals(bytes)).toBe(true)
  })

  it('refuses past the account\'s quota as the upload route does (413, the same words), leaving nothing stored or listed', async () => {
    const dir = await useTempDir()
    const bytes = randomBytes(8 * 1024)
    const path = join(dir, 'object.bin')
    await writeFile(path, bytes)
    const { cid, blocks } = named(bytes)
    const policy = { ...OPEN_POLICY, maxBytesPerAccount: 5 * 1024 }
    const overHttp = await localServiceUnderTest({ policy })
    const refused = await overHttp.clients.objects.put(path, PROFILE).catch((err: unknown) => err)
    expect(refused).toBeInstanceOf(RemoteStatusError)
    expect((refused as RemoteStatusError).status).toBe(413)
    const service = await localServiceUnderTest({ policy })
    for (const request of [{ expectedCid: cid.toString(), blocks }, {}]) {
      const failure = await service.local.addFile({ path, profile: PROFILE, apiKey: service.apiKey, ...request }).catch((err: unknown) => err) as AddFailure
      expect(failure.status).toBe(413)
      expect((refused as RemoteStatusError).message).toContain(failure.message)
    }
    expect(await listed(service)).toEqual([])
    for (const leaf of blocks.leaves) expect(await service.local.readStoredBlock(CID.decode(leaf))).toBeUndefined()
  })

  it('refuses a key the service does not know (401), storing nothing', async () => {
    const dir = await useTempDir()
    const path = join(dir, 'object.bin')
    await writeFile(path, randomBytes(2048))
    const service = await localServiceUnderTest()
    const failure = await service.local.addFile({ path, profile: PROFILE, apiKey: 'not-a-key' }).catch((err: unknown) => err) as AddFailure
    expect(failure.status).toBe(401)
    expect(await listed(service)).toEqual([])
  })

  it('answers a failed fsync as failed (503, what to do), never as stored, on its own thread as on the caller\'s', async () => {
    const dir = await useTempDir()
    const bytes = randomBytes(6 * 1024)
    const path = join(dir, 'object.bin')
    await writeFile(path, bytes)
    const { cid, blocks } = named(bytes)
    const service = await localServiceUnderTest()
    // A worker takes a copy of the environment when it starts: the failpoint is set before.
    withFailpoint('service:pack-fsync=EIO')
    const threadDir = await useTempDir()
    const thread = await startLocalServiceThread({ dir: threadDir })
    onTestFinished(async () => { await thread.stop() })

    const failure = await service.local.addFile({ path, profile: PROFILE, apiKey: service.apiKey, expectedCid: cid.toString(), blocks }).catch((err: unknown) => err) as AddFailure
    expect(failure.status).toBe(503)
    expect(failure.message).toMatch(/failed to sync its data \(EIO\).*check the disk/)
    expect(await listed(service)).toEqual([])
    // Once failed, nothing more is answered as stored, the failpoint gone or not.
    delete process.env.CIDSYNC_FAILPOINT
    const again = await service.local.addFile({ path, profile: PROFILE, apiKey: service.apiKey }).catch((err: unknown) => err) as AddFailure
    expect(again.status).toBe(503)
    expect(await listed(service)).toEqual([])

    // Through the thread: an account made over HTTP (the route's sign-up), then the add refused.
    const { createServiceClients } = await import('../../src/remote/index.js')
    const { newWalletKey } = await import('../../src/crypto/index.js')
    const clients = createServiceClients({ dealUrl: thread.url, apiUrl: thread.url, pointerUrl: thread.url, uploadUrl: thread.url, gateways: [thread.url] }, { apiKey: () => undefined, sessionToken: () => undefined })
    onTestFinished(async () => { await clients.close() })
    const { apiKey } = await clients.deals.login(newWalletKey())
    const threaded = await thread.addFile({ path, profile: PROFILE, apiKey, expectedCid: cid.toString(), blocks }).catch((err: unknown) => err) as AddFailure
    expect(threaded).toBeInstanceOf(Error)
    expect(threaded.status).toBe(503)
    expect(threaded.message).toMatch(/failed to sync its data \(EIO\)/)
  })
})
