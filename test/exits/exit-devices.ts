import { expect } from 'vitest'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { CarReader } from '@ipld/car'
import { sha256 } from 'multiformats/hashes/sha2'
import { localServiceUnderTest } from '../helpers/service.js'
import { EmbeddedObjectStore, type LocalReads } from '../../src/connect/index.js'
import type { LocalService } from '../../src/local-service/index.js'
import type { ServiceClients } from '../../src/remote/index.js'
import { contentDevice, ok, writeSomeFiles, type ContentDevice } from '../cli/content-devices.js'

export type Service = Awaited<ReturnType<typeof localServiceUnderTest>>

/** A local service of its own under `root/name`: an account that has never seen the others' objects. */
export async function freshService (root: string, name: string): Promise<Service> {
  return await localServiceUnderTest({ dir: join(root, name), pageSize: 1000 })
}

/** A storing device on `service` (tiny parts and packs, so a few MiB span many objects). */
/** Two publish times an hour apart, on the test clock (`CIDSYNC_TEST_CLOCK`): distinct without waiting. */
export const FIRST = '2026-01-01T08:00:00.000Z'
export const SECOND = '2026-01-01T09:00:00.000Z'

/** The environment that makes a command's publish start at `at` on the test clock. */
export function publishedAt (at: string): NodeJS.ProcessEnv {
  return { CIDSYNC_TEST_CLOCK: at }
}

export async function exitDevice (root: string, service: Service, name: string): Promise<ContentDevice> {
  return await contentDevice(root, service, name)
}

/** Device `a` on a fresh service `one`, published twice (at FIRST and SECOND), each time with new files. */
export async function twoPublishes (root: string): Promise<{ one: Service, a: ContentDevice }> {
  const one = await freshService(root, 'one')
  const a = await exitDevice(root, one, 'a')
  await writeSomeFiles(a.folder, 'first', { largeBytes: 1024 * 1024 + 3, small: 5 })
  await ok(a, ['snapshot'], publishedAt(FIRST))
  await writeSomeFiles(a.folder, 'second', { largeBytes: 1024 * 1024 + 9, small: 5 })
  await ok(a, ['snapshot'], publishedAt(SECOND))
  return { one, a }
}

export interface HistoryRow { cid: string, at: string, previous: string | null }

export async function historyOf (d: ContentDevice): Promise<HistoryRow[]> {
  return JSON.parse((await ok(d, ['history', '--json'])).stdout) as HistoryRow[]
}

/** The pointer `d`'s service holds for its namespace, or null. */
export async function pointerOf (d: ContentDevice): Promise<string | null> {
  const result = await d.run(['pointer', 'get', '--json'])
  if (result.code === 3) return null
  expect(result.code, result.stderr).toBe(0)
  return (JSON.parse(result.stdout) as { snapshotCid: string }).snapshotCid
}

/**
 * A CAR read by @ipld/car's reader, every block's bytes hashed here (not by cidsync) and compared
 * with its CID: answers its roots and blocks.
 */
export async function readCar (path: string): Promise<{ roots: string[], blocks: Map<string, Uint8Array> }> {
  const reader = await CarReader.fromBytes(await readFile(path))
  const blocks = new Map<string, Uint8Array>()
  for await (const block of reader.blocks()) {
    expect(block.cid.multihash.code).toBe(sha256.code)
    const digest = await sha256.digest(block.bytes)
    expect(Buffer.from(digest.digest).equals(Buffer.from(block.cid.multihash.digest)), `block ${block.cid.toString()} hashes to its CID`).toBe(true)
    blocks.set(block.cid.toString(), block.bytes)
  }
  return { roots: (await reader.getRoots()).map(r => r.toString()), blocks }
}

/**
 * `clients` whose objects are read from `local`'s packs in this process, as the embedded service's
 * are: reads through `reads`, puts and everything else as before.
 */
export function inProcess (service: { readonly clients: ServiceClients, readonly local: LocalService | undefined }, reads: { block: LocalReads['block'], run?: LocalReads['run'] }): ServiceClients {
  const run: LocalReads['run'] = reads.run ?? (async (cids) => await Promise.all(cids.map(async cid => await reads.block(cid))))
  if (service.local === undefined) throw new Error('a service in this process is needed')
  return { ...service.clients, objects: new EmbeddedObjectStore(service.clients.objects, service.local, () => undefined, { block: reads.block, run }) }
}
