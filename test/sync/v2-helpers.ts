import { join } from 'node:path'
import pino from 'pino'
import type { Config } from '../../src/config/index.js'
import { indexPath, openIndex, type Index } from '../../src/index/index.js'
import type { ServiceClients } from '../../src/remote/index.js'
import type { Clock } from '../../src/util/clock.js'
import { publish, readPublish, restore, walkEntries, walkHistory, type HistoryEntry, type ManifestCache } from '../../src/sync/index.js'
import { exportKey, importKey, type Manifest } from '../../src/snapshot/index.js'
import { repositoryOf, restoring, closeDeviceIndex, syncDevice, syncOf, type SyncDevice } from '../helpers/sync-device.js'

export const logger = pino({ level: 'silent' })

/** Every row as a restore must give it back: device, place, content, sequence, tombstone. */
export const everything = (index: Index): unknown[] =>
  index.entries.list({ includeDeleted: true }).map(e => [e.deviceId, e.folder, e.path, e.cid, e.size, e.seq, e.deleted]).sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)))

export const devicesOf = (index: Index): unknown[] => index.segments.devices().map(d => [d.deviceId, d.lastSeq])

/** The index file of a state dir, read once and closed. */
export function readIndex<T> (config: Config, read: (index: Index) => T): T {
  const index = openIndex(indexPath(config.stateDir), { readonly: true })
  try { return read(index) } finally { index.close() }
}

/** Publishes `d`'s index; with `clock`, stamped with its time instead of the system's. */
export async function pub (d: SyncDevice, clients: ServiceClients, config: Config = d.config, clock?: Clock): Promise<{ cid: string, merged: number }> {
  return await publish({ ...syncOf(d, clients, logger, config), clock })
}

/** A device that restores: shares `from`'s key, its own index closed (a restore replaces it). */
export async function restorer (root: string, name: string, from: SyncDevice, namespace: string): Promise<SyncDevice> {
  const r = await syncDevice(root, name, `${name.padEnd(8, '0').slice(0, 8)}-9999-4000-8000-000000000000`, { namespace })
  importKey(r.config.stateDir, exportKey(from.config.stateDir))
  closeDeviceIndex(r)
  return r
}

export async function restoreInto (clients: ServiceClients, r: SyncDevice, namespace: string, extra: { cid?: string, at?: Date } = {}): Promise<{ rows: unknown[], publish: HistoryEntry }> {
  const done = await restore(restoring(clients, r.config), { namespace, network: 'mainnet', force: true, ...extra })
  return { rows: readIndex(r.config, everything), publish: done.publish }
}

export function memoryCache (): ManifestCache & { readonly kept: Map<string, string> } {
  const kept = new Map<string, string>()
  return { kept, get: (cid) => kept.get(cid), put: (cid, json) => { kept.set(cid, json) } }
}

/** The chain from `start`, newest first, read through the gateways. */
export async function chain (clients: ServiceClients, d: SyncDevice, start: string): Promise<Array<{ entry: HistoryEntry, manifest: Manifest | undefined }>> {
  const out = []
  for await (const p of walkHistory(clients, start, memoryCache(), { stateDir: d.config.stateDir, dir: join(d.config.stateDir, 'snapshots'), label: 'test' })) out.push(p)
  return out
}

export async function manifestOf (clients: ServiceClients, d: SyncDevice, cid: string): Promise<Manifest> {
  const { manifest } = await readPublish(clients, cid, memoryCache(), { stateDir: d.config.stateDir, dir: d.config.stateDir, label: 'test' })
  if (manifest === undefined) throw new Error(`${cid} is not a manifest`)
  return manifest
}

/** The pointer's history as `d` reads it on `clients`, newest first. */
export async function historyOf (d: SyncDevice, clients: ServiceClients): Promise<HistoryEntry[]> {
  const repository = repositoryOf(d, clients)
  const pointer = await clients.pointers.current(d.config.namespace, 'mainnet')
  const rows: HistoryEntry[] = []
  for await (const entry of walkEntries(clients, pointer.snapshotCid, repository.manifestCache, repository.readContext('history'))) rows.push(entry)
  return rows
}
