import { PointerNotFoundError } from '../../errors.js'
import type { Index } from '../../index/index.js'
import type { Repository } from '../repository.js'
import { isUnusable, readPublish } from '../read/index.js'

/** A device whose rows at the pointer pass what this index holds of it. */
export interface DeviceAhead {
  readonly deviceId: string
  /** As its publish names it: unauthenticated beyond the key, shown neutralised. */
  readonly hostname: string
}

/** The pointer's publish, and the devices whose rows there this index has not taken in. */
export interface PointerAhead {
  readonly pointer: string
  readonly at: string
  readonly devices: readonly DeviceAhead[]
}

/**
 * Whether the pointer holds rows of other devices past those in `index`: rows a `get` or
 * `restore --files` from this index would not bring back. This device's own never count: its
 * index holds its newest. Undefined where nothing is ahead, or the pointer cannot be read here
 * (none set, a head of another key or engine): the caller's own reads say what is wrong then.
 */
export async function devicesAhead (repository: Repository, index: Index, own: string | undefined, signal?: AbortSignal): Promise<PointerAhead | undefined> {
  const { config } = repository
  const known = new Map(index.segments.devices().map(d => [d.deviceId, d.lastSeq]))
  try {
    const pointer = (await repository.pointers.current(config.namespace, config.network, { signal })).snapshotCid
    const { entry, manifest } = await readPublish(repository.home, pointer, repository.manifestCache, repository.readContext('history', { signal }))
    if (manifest === undefined) return undefined
    const devices = manifest.devices
      .filter(d => d.deviceId !== own && d.lastSeq > (known.get(d.deviceId) ?? 0))
      .map(d => ({ deviceId: d.deviceId, hostname: d.hostname }))
    return devices.length === 0 ? undefined : { pointer, at: entry.at, devices }
  } catch (err) {
    if (isUnusable(err) || err instanceof PointerNotFoundError) return undefined
    throw err
  }
}
