import { afterEach } from 'vitest'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig, type Config } from '../../src/config/index.js'
import { indexPath, openIndex, type Index } from '../../src/index/index.js'
import type { ServiceClients } from '../../src/remote/index.js'
import type { ObjectHome } from '../../src/store/index.js'
import type { Logger } from 'pino'
import { Repository, SyncStoreOwner, type RestoreComponents, type SyncComponents, type SyncService, type SyncStore } from '../../src/sync/index.js'

/**
 * A device for sync tests: its config (namespace and `[snapshot]` keys given), state dir, open
 * index, and its sync store as a process's owner holds it (opened on first use, closed after the test).
 */
export interface SyncDevice { id: string, config: Config, index: Index, readonly store: SyncStore }

const open: Index[] = []
const owners: SyncStoreOwner[] = []
const repositories: Repository[] = []
afterEach(async () => {
  for (const r of repositories.splice(0)) await r.close()
  for (const i of open.splice(0)) i.close()
  for (const o of owners.splice(0)) o.close()
})

/** A sync store owner for `stateDir`, closed after the test (as a command closes its own). */
export function syncStoreOwner (stateDir: string): SyncStoreOwner {
  const owner = new SyncStoreOwner(stateDir)
  owners.push(owner)
  return owner
}

/** The repository a process of `d` opens on `clients` (with `config`, else the device's), sharing its sync store; closed after the test. */
export function repositoryOf<H extends ObjectHome = ServiceClients> (d: Pick<SyncDevice, 'config' | 'store'>, clients: H, config: Config = d.config): Repository<H> {
  const repository = new Repository(config, clients, { passphrase: undefined, store: d.store })
  repositories.push(repository as Repository)
  return repository
}

/** What a sync operation of `d` on `clients` is given, as the daemon gives it (`config` defaults to the device's). */
export function syncOf (d: SyncDevice, clients: SyncService, logger: Logger, config: Config = d.config): SyncComponents {
  return { index: d.index, logger, deviceId: d.id, repository: repositoryOf(d, clients, config) }
}

/** A repository on `home` read with `config` and no passphrase, as a command opens one; closed after the test. */
export function repositoryOn (config: Config, home: ObjectHome): Repository {
  const repository = new Repository(config, home, { passphrase: undefined })
  repositories.push(repository)
  return repository
}

/** What a restore into `config`'s state dir is given, as the restore command gives it. */
export function restoring (clients: ServiceClients, config: Config): RestoreComponents {
  const repository = new Repository(config, clients, { passphrase: undefined })
  repositories.push(repository)
  return { repository, syncState: syncStoreOwner(config.stateDir) }
}

/** Makes `root/name` with a config (`snapshot` lines go under `[snapshot]`), a state dir and a registered device. */
export async function syncDevice (root: string, name: string, id: string, options: { namespace: string, snapshot?: string }): Promise<SyncDevice> {
  const dir = join(root, name)
  await mkdir(dir, { recursive: true })
  await writeFile(join(dir, 'c.toml'), `state_dir = "state"\nnamespace = "${options.namespace}"\n[snapshot]\n${options.snapshot ?? 'deal = false\n'}`)
  const config = loadConfig({ configPath: join(dir, 'c.toml'), env: {} })
  await mkdir(config.stateDir, { recursive: true })
  const index = openIndex(indexPath(config.stateDir))
  open.push(index)
  index.entries.registerDevice(id, name)
  const owner = syncStoreOwner(config.stateDir)
  return { id, config, index, get store () { return owner.store } }
}

/** Rows as the watcher would write them for files named `paths` in folder `notes`. */
export function writeRows (d: SyncDevice, ...paths: string[]): void {
  d.index.entries.apply(d.id, paths.map(path => ({ kind: 'upsert' as const, folder: 'notes', path, size: path.length, mtimeMs: 1, cid: `cid-${path}`, cidProfile: 'kubo-cidv1' })))
}

/** Closes a device's index before the test ends (a restore replaces it). */
export function closeDeviceIndex (d: SyncDevice): void {
  d.index.close()
  open.splice(open.indexOf(d.index), 1)
}
