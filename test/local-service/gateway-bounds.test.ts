import { describe, expect, it, onTestFinished } from 'vitest'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { request } from 'node:http'
import * as dagPb from '@ipld/dag-pb'
import { CarBlockIterator } from '@ipld/car'
import { UnixFS } from 'ipfs-unixfs'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { startLocalService, type LocalServiceInit } from '../../src/local-service/index.js'
import { openServiceDatabase } from '../../src/local-service/store.js'
import { BlockStore } from '../../src/local-service/blocks.js'
import { CLI } from '../helpers/cli.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { until, within } from '../helpers/wait.js'
import { fetchBytes, verifiedCar } from '../helpers/trustless.js'

type Block = readonly [CID, Uint8Array]

async function rawBlock (bytes: Uint8Array): Promise<Block> {
  return [CID.createV1(raw.code, await sha256.digest(bytes)), bytes]
}

/** A dag-pb node linking `links` in order (a UnixFS file node, so the file route walks it too). */
async function node (links: readonly CID[]): Promise<Block> {
  const bytes = dagPb.encode(dagPb.prepare({ Data: new UnixFS({ type: 'file' }).marshal(), Links: links.map(Hash => ({ Hash })) }))
  return [CID.createV1(dagPb.code, await sha256.digest(bytes)), bytes]
}

/** A service directory holding exactly `blocks`, filed under the CIDs given (a damaged store can file a block under a CID that is not its own). */
async function storeDir (blocks: readonly Block[]): Promise<string> {
  const dir = await useTempDir()
  const db = await openServiceDatabase(dir)
  const store = new BlockStore(dir, db)
  for (const [cid, bytes] of blocks) store.put(cid, bytes)
  store.close()
  db.close()
  return dir
}

async function serviceHolding (blocks: readonly Block[], init: Partial<LocalServiceInit> = {}): Promise<string> {
  const local = await startLocalService({ dir: await storeDir(blocks), ...init })
  onTestFinished(async () => { await local.stop() })
  return local.url
}

/** The blocks a (possibly cut) CAR body holds before it ends or breaks. */
async function blocksIn (body: Uint8Array): Promise<number> {
  let n = 0
  try {
    for await (const _block of await CarBlockIterator.fromBytes(body)) n++
  } catch {}
  return n
}

/** A ladder of `rungs` nodes over `leaf`, each linking the one below twice: 2^rungs leaves, rungs + 1 distinct blocks. */
async function ladder (leaf: Block, rungs: number): Promise<Block[]> {
  const blocks = [leaf]
  for (let i = 0; i < rungs; i++) {
    const below = (blocks.at(-1) as Block)[0]
    blocks.push(await node([below, below]))
  }
  return blocks
}

/** A UnixFS directory node (plain, or a HAMT shard of fanout 256) with named links. */
async function directory (type: 'directory' | 'hamt-sharded-directory', links: ReadonlyArray<readonly [string, CID]>): Promise<Block> {
  const unixfs = type === 'directory' ? new UnixFS({ type }) : new UnixFS({ type, fanout: 256n, hashType: 0x22n })
  const bytes = dagPb.encode(dagPb.prepare({ Data: unixfs.marshal(), Links: links.map(([Name, Hash]) => ({ Name, Hash })) }))
  return [CID.createV1(dagPb.code, await sha256.digest(bytes)), bytes]
}

describe('the gateway\'s dag-scope=entity on directories', () => {
  it('carries a directory\'s own block, a HAMT directory\'s shards without its entries, and everything for dag-scope=all', async () => {
    const a = await rawBlock(Buffer.from('file a'))
    const b = await rawBlock(Buffer.from('file b'))
    const plain = await directory('directory', [['a.txt', a[0]], ['b.txt', b[0]]])
    const shard = await directory('hamt-sharded-directory', [['41b.txt', b[0]]])
    const hamt = await directory('hamt-sharded-directory', [['0Fa.txt', a[0]], ['7E', shard[0]]])
    const url = await serviceHolding([a, b, plain, shard, hamt])
    const cids = async (root: CID, scope: string): Promise<string[]> =>
      (await verifiedCar((await fetchBytes(url, `/ipfs/${root.toString()}?format=car&dag-scope=${scope}`)).body)).blocks.map(x => x.cid.toString())
    expect(await cids(plain[0], 'entity')).toEqual([plain[0].toString()])
    expect(await cids(plain[0], 'all')).toEqual([plain[0], a[0], b[0]].map(c => c.toString()))
    expect(await cids(hamt[0], 'entity')).toEqual([hamt[0], shard[0]].map(c => c.toString()))
    expect(await cids(hamt[0], 'all')).toEqual([hamt[0], a[0], shard[0], b[0]].map(c => c.toString()))
    // entity-bytes means nothing for a directory: ignored, as the spec says.
    expect(await cids(plain[0], 'entity&entity-bytes=0:10')).toEqual([plain[0].toString()])
  })
})

describe('the gateway\'s DAG walk is bounded', () => {
  it('cuts a CAR that would send more blocks than its bound (shared subtrees with dups=y), and sends them once with dups=n', async () => {
    const blocks = await ladder(await rawBlock(Buffer.from('leaf')), 40)
    const root = (blocks.at(-1) as Block)[0].toString()
    const url = await serviceHolding(blocks, { carLimits: { maxBlocks: 1000 } })
    const once = await fetchBytes(url, `/ipfs/${root}?format=car`)
    expect(once.complete).toBe(true)
    expect((await verifiedCar(once.body)).blocks.length).toBe(41)
    const every = await fetchBytes(url, `/ipfs/${root}?format=car&car-dups=y`)
    expect(every).toMatchObject({ status: 200, complete: false })
    expect(await blocksIn(every.body)).toBeLessThanOrEqual(1000)
  })

  it('cuts a CAR that would send more bytes than its bound: a small DAG of repeated links with dups=y, within the block bound; [local_service] max_car_bytes sets it', async () => {
    // 17 blocks, 64 KiB stored; with dups=y, 65,536 leaves: 4 GiB, far under the block bound.
    const blocks = await ladder(await rawBlock(randomBytes(64 * 1024)), 16)
    const root = (blocks.at(-1) as Block)[0].toString()
    const url = await serviceHolding(blocks, { carLimits: { maxBytes: 4 * 1024 * 1024 } })
    const once = await fetchBytes(url, `/ipfs/${root}?format=car`)
    expect(once.complete).toBe(true)
    expect((await verifiedCar(once.body)).blocks.length).toBe(17)
    const every = await within(fetchBytes(url, `/ipfs/${root}?format=car&car-dups=y`), 60_000, 'the amplified CAR cut')
    expect(every).toMatchObject({ status: 200, complete: false })
    expect(every.body.byteLength).toBeLessThanOrEqual(4 * 1024 * 1024 + 64 * 1024 + 1024)

    // The setting, as a self-hosted service reads it from its config.
    const dir = await storeDir(blocks)
    const config = join(dir, 'service.toml')
    await writeFile(config, `[local_service]\nmax_car_bytes = "2MiB"\n`)
    const child = spawn(process.execPath, [CLI, 'local-service', '--config', config, '--dir', dir, '--listen', '127.0.0.1:0', '--no-admin'], { stdio: ['ignore', 'pipe', 'pipe'] })
    onTestFinished(async () => {
      if (child.exitCode === null) {
        const exited = new Promise(resolve => child.once('exit', resolve))
        child.kill('SIGKILL')
        await exited
      }
    })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
    child.stderr.resume()
    const served = await until(() => /^(http:\/\/\S+)/m.exec(out)?.[1], 30_000, 'the service to print its URL')
    const cut = await within(fetchBytes(served, `/ipfs/${root}?format=car&car-dups=y`), 60_000, 'the CAR cut at max_car_bytes')
    expect(cut).toMatchObject({ status: 200, complete: false })
    expect(cut.body.byteLength).toBeLessThanOrEqual(2 * 1024 * 1024 + 64 * 1024 + 1024)
    expect((await fetchBytes(served, `/ipfs/${root}?format=car`)).complete).toBe(true)
  })

  it('cuts a walk that would hold more links than its bound, or go deeper than its bound', async () => {
    const leaf = await rawBlock(Buffer.from('leaf'))
    const wide = await node(Array.from({ length: 5000 }, () => leaf[0]))
    const narrow = await node(Array.from({ length: 500 }, () => leaf[0]))
    const chain: Block[] = [leaf]
    for (let i = 0; i < 100; i++) chain.push(await node([(chain.at(-1) as Block)[0]]))
    const url = await serviceHolding([leaf, wide, narrow, ...chain], { carLimits: { maxPendingLinks: 1000, maxDepth: 50 } })
    expect(await fetchBytes(url, `/ipfs/${wide[0].toString()}?format=car`)).toMatchObject({ status: 200, complete: false })
    expect(await fetchBytes(url, `/ipfs/${narrow[0].toString()}?format=car`)).toMatchObject({ status: 200, complete: true })
    const top = (chain.at(-1) as Block)[0].toString()
    expect(await fetchBytes(url, `/ipfs/${top}?format=car`)).toMatchObject({ status: 200, complete: false })
    // Its nodes announce no bytes: the file is empty, and nothing is walked for it.
    expect(await fetchBytes(url, `/ipfs/${top}`)).toMatchObject({ status: 200, complete: true, body: Buffer.alloc(0) })
    expect(await fetchBytes(url, `/ipfs/${chain[40]?.[0].toString() as string}?format=car`)).toMatchObject({ status: 200, complete: true })
  })

  it('stops at a cycle, which only a damaged store can hold (a block filed under a CID it links to)', async () => {
    const looped = CID.createV1(dagPb.code, await sha256.digest(Buffer.from('not these bytes')))
    const bytes = dagPb.encode(dagPb.prepare({ Data: new UnixFS({ type: 'file' }).marshal(), Links: [{ Hash: looped }] }))
    // The default bounds: the cycle is what stops it, not a count.
    const url = await serviceHolding([[looped, bytes]])
    // As a file claiming a byte, the walk loops until its depth bound, before any byte is sent.
    const claiming = await serviceHolding([[looped, dagPb.encode(dagPb.prepare({ Data: new UnixFS({ type: 'file', blockSizes: [1n] }).marshal(), Links: [{ Hash: looped }] }))]])
    for (const query of ['?format=car', '?format=car&car-dups=y']) {
      const answer = await within(fetchBytes(url, `/ipfs/${looped.toString()}${query}`), 30_000, `the looped DAG${query}`)
      expect(answer, query).toMatchObject({ complete: false })
    }
    // The file holds no byte before the cycle: a 502 before the head, not a cut stream.
    const file = await within(fetchBytes(claiming, `/ipfs/${looped.toString()}`), 30_000, 'the looped file')
    expect(file).toMatchObject({ status: 502, complete: true })
    expect(file.body.toString()).toContain('levels')
  })

  it('does not buffer the DAG for a client that stops reading: the service waits, its memory flat, and the CAR then arrives whole', async () => {
    // 512 MiB of CAR from 1 MiB stored: one leaf met 512 times, with dups=y.
    const blocks = await ladder(await rawBlock(randomBytes(1024 * 1024)), 9)
    const root = (blocks.at(-1) as Block)[0].toString()
    const dir = await storeDir(blocks)
    const child = spawn(process.execPath, [CLI, 'local-service', '--dir', dir, '--listen', '127.0.0.1:0', '--no-admin'], { stdio: ['ignore', 'pipe', 'pipe'] })
    onTestFinished(async () => {
      if (child.exitCode === null) {
        const exited = new Promise(resolve => child.once('exit', resolve))
        child.kill('SIGKILL')
        await exited
      }
    })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
    child.stderr.resume()
    const url = await until(() => /^(http:\/\/\S+)/m.exec(out)?.[1], 30_000, 'the service to print its URL')
    const pid = child.pid as number
    const status = async (): Promise<string> => await readFile(`/proc/${pid}/status`, 'utf8')
    const kib = (text: string, field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1])
    const cpu = async (): Promise<number> => {
      const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? []
      return Number(fields[11]) + Number(fields[12]) // utime + stime
    }
    const before = kib(await status(), 'VmHWM')

    const target = new URL(`/ipfs/${root}?format=car&car-dups=y`, url)
    let received = 0
    const response = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      request({ host: target.hostname, port: target.port, path: `${target.pathname}${target.search}` }, resolve).on('error', reject).end()
    })
    expect(response.statusCode).toBe(200)
    await new Promise<void>(resolve => response.once('data', (chunk: Buffer) => { received += chunk.byteLength; response.pause(); resolve() }))
    // The service has started to send; with the client not reading, it must come to rest, not read on.
    let last = -1
    let flat = 0
    await until(async () => {
      const now = await cpu()
      flat = now === last ? flat + 1 : 0
      last = now
      return flat >= 5 ? true : undefined
    }, 60_000, 'the service to wait on the client', 100)
    const stalled = kib(await status(), 'VmHWM')
    expect(stalled - before).toBeLessThan(160 * 1024) // KiB: far under the 512 MiB it would hold if it buffered

    response.on('data', (chunk: Buffer) => { received += chunk.byteLength })
    await within(new Promise<void>((resolve, reject) => { response.once('end', resolve); response.once('error', reject); response.resume() }), 120_000, 'the whole CAR')
    expect(response.complete).toBe(true)
    expect(received).toBeGreaterThan(512 * 1024 * 1024)
  })
})

/** A UnixFS file node over `links`, announcing each holds `blockSize` bytes (or the sizes given, one per link). */
async function fileNode (links: readonly CID[], blockSize: number | readonly number[]): Promise<Block> {
  const unixfs = new UnixFS({ type: 'file', blockSizes: links.map((_, i) => BigInt(typeof blockSize === 'number' ? blockSize : blockSize[i] as number)) })
  const bytes = dagPb.encode(dagPb.prepare({ Data: unixfs.marshal(), Links: links.map(Hash => ({ Hash })) }))
  return [CID.createV1(dagPb.code, await sha256.digest(bytes)), bytes]
}

describe('the gateway\'s file answers are bounded as its CARs are', () => {
  it('refuses up front (413) a file larger than max_car_bytes, and cuts a DAG with more blocks than its bound', async () => {
    const leaf = await rawBlock(randomBytes(1024))
    const big = await fileNode(Array.from({ length: 8 }, () => leaf[0]), 1024)
    const wide = await fileNode(Array.from({ length: 300 }, () => leaf[0]), 1024)
    const url = await serviceHolding([leaf, big, wide], { carLimits: { maxBytes: 4096, maxBlocks: 100 } })
    const refused = await fetchBytes(url, `/ipfs/${big[0].toString()}`)
    expect(refused.status).toBe(413)
    expect(JSON.parse(refused.body.toString()).error).toContain('more than this gateway sends in one answer (4096, [local_service] max_car_bytes)')
    // 300 KiB announced, under no byte bound of its own here: the block bound cuts it.
    const url2 = await serviceHolding([leaf, wide], { carLimits: { maxBlocks: 100 } })
    const cut = await within(fetchBytes(url2, `/ipfs/${wide[0].toString()}`), 30_000, 'the wide file cut')
    expect(cut).toMatchObject({ status: 200, complete: false })
    expect(cut.body.byteLength).toBeLessThanOrEqual(100 * 1024)
  })

  it('sends no more bytes than the root announced: a small file over a ladder of repeated links is cut, not walked for terabytes', async () => {
    // 2^40 leaves of 1 KiB under a root that announces 1.5 KiB.
    const rungs = await ladder(await rawBlock(randomBytes(1024)), 40)
    const top = (rungs.at(-1) as Block)[0]
    const root = await fileNode([top, top], [1024, 512])
    const url = await serviceHolding([...rungs, root])
    const answer = await within(fetchBytes(url, `/ipfs/${root[0].toString()}`), 30_000, 'the amplified file cut')
    expect(answer).toMatchObject({ status: 200, complete: false })
    expect(answer.headers['content-length']).toBe('1536')
    expect(answer.body.byteLength).toBe(1024)
  })

  it('answers 502 with what is wrong, not a 500, when the block under a dag-pb CID is not dag-pb', async () => {
    const junk = Buffer.from('these bytes are not a dag-pb node at all')
    const cid = CID.createV1(dagPb.code, await sha256.digest(junk))
    const url = await serviceHolding([[cid, junk]])
    for (const query of ['', '?format=car']) {
      const answer = await fetchBytes(url, `/ipfs/${cid.toString()}${query}`)
      expect(answer.status, query).toBe(502)
      expect(JSON.parse(answer.body.toString()).error).toContain(`the block stored under ${cid.toString()} is not valid dag-pb`)
    }
    // The block itself is still served: its client checks it.
    expect((await fetchBytes(url, `/ipfs/${cid.toString()}?format=raw`)).body.equals(junk)).toBe(true)
  })
})
