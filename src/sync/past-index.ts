import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Config } from '../config/index.js'
import { NothingAtTimeError } from '../errors.js'
import { openIndex, type Index } from '../index/index.js'
import { publishAt } from './history.js'
import { checkOwnPublishIn } from './own-publish-check.js'
import { buildIndex } from './build-index.js'
import { readContext } from './read-context.js'
import type { SyncComponents } from './sync-components.js'

/** An index as a past publish saw it, built aside in the state dir; `close` removes it. */
export interface PastIndex {
  readonly index: Index
  /** The publish it is: its manifest's CID and time. */
  readonly cid: string
  readonly at: string
  close: () => Promise<void>
}

/**
 * Builds the index the newest publish at or before `at` held (docs/snapshot-format.md, "Restore"),
 * into a file of its own: nothing of this device's index changes. Exit 3 when nothing that early
 * was published.
 */
export async function openPastIndex (components: Pick<SyncComponents, 'clients' | 'store'>, config: Config, at: Date, options: { passphrase?: string, signal?: AbortSignal } = {}): Promise<PastIndex> {
  const { clients, store } = components
  // Bound to this namespace: a past publish of another namespace put behind the pointer would
  // otherwise have its files written into this one's folders.
  const fetch = readContext(config, { label: 'past', passphrase: options.passphrase, signal: options.signal })
  const dir = fetch.dir
  const pointer = await clients.pointers.current(config.namespace, config.network, { signal: options.signal })
  const found = await publishAt(clients, pointer.snapshotCid, at, store.manifestCache, fetch)
  checkOwnPublishIn(found?.entry, store.lastPublished(), at)
  if (found === undefined || found.manifest === undefined) {
    throw new NothingAtTimeError(`nothing ${found === undefined ? 'was published' : 'of cidsync-sqlite/2 (with content records) was published'} at or before ${at.toISOString()}: see \`cidsync history\` for the times there are`)
  }
  const path = join(dir, `past-${process.pid}-${Date.now()}.sqlite`)
  const remove = async (): Promise<void> => { for (const suffix of ['', '-wal', '-shm']) await rm(`${path}${suffix}`, { force: true }) }
  try {
    await buildIndex(clients, found.manifest, path, fetch)
    const index = openIndex(path, { check: false })
    return { index, cid: found.entry.cid, at: found.entry.at, close: async () => { index.close(); await remove() } }
  } catch (err) {
    await remove()
    throw err
  }
}
