import { ForgetContendedError, PointerNotFoundError, PruneContendedError, RetentionSetBackError } from '../../errors.js'
import { isUnusable, readPublish, walkEntries } from '../read/index.js'
import type { Repository } from '../repository.js'

/**
 * Refuses a forget or prune while the pointer's chain lacks this device's own last publish
 * (docs/retention.md, "A pointer set back"). Each device's list at the pointer only grows, and a
 * forget seals kept publishes again with their lists as they were: so the head's list for this
 * device reaches the furthest sequence it published, unless the pointer was set back. A chain
 * that still holds that publish (by its CID, or the one it was made with) passes too: what it
 * names is kept. Else a prune would delete what this device's later publishes name, and a forget
 * would drop them from the history. A head this device cannot read is left to the caller's walk.
 */
export async function checkOwnPublishHeld (repository: Repository, command: 'forget' | 'prune', signal?: AbortSignal, read?: string): Promise<void> {
  const { config, store } = repository
  const own = store.ownPublished()
  const last = store.lastPublished()
  if (own === undefined && last === undefined) return
  const current = async (): Promise<string> => (await repository.pointers.current(config.namespace, config.network, { signal })).snapshotCid
  // The pointer the caller goes on with, when it read it: a set-back between two reads is never missed.
  const pointer = read ?? await current()
  const ours = { own, last }
  if (await holdsOwn(repository, command, pointer, ours, signal)) return
  // A publish of this device (its daemon's) may have moved the pointer since the caller read it:
  // the chain read lacks it only for being older. Contended only where the new head holds it:
  // a pointer that moves between heads that lack it is set back, whichever is read.
  if (read !== undefined) {
    const now = await current().catch((err: unknown) => {
      // No pointer now: set back to nothing, said as such below.
      if (err instanceof PointerNotFoundError) return read
      throw err
    })
    if (now !== read && await holdsOwn(repository, command, now, ours, signal)) throw contended(command, now, read)
  }
  const done = command === 'prune' ? 'Nothing was deleted: a prune now would delete what that publish names' : 'Nothing was forgotten: a forget now would drop that publish from the history'
  const named = last === undefined ? `(sequence ${own?.seq ?? '?'})` : `${last.cid}${last.at === null ? '' : ` of ${last.at}`}`
  throw new RetentionSetBackError(`the pointer holds ${pointer}, whose history lacks this device's own last publish ${named}. ` +
    'The service set the pointer back (restored from a backup, or lying), or a device published over it without merging. ' +
    `${done}. Let the daemon publish, or run \`cidsync snapshot\`: this device then publishes on top of the pointer with every row it holds. ` +
    `Then run \`cidsync ${command}\` again`)
}

/** This device's own last publish, as its sync state holds it. */
interface OwnPublished {
  readonly own: ReturnType<Repository['store']['ownPublished']>
  readonly last: ReturnType<Repository['store']['lastPublished']>
}

/** Whether the chain at `pointer` holds this device's own last publish (or cannot be read here: the caller's walk says so). */
async function holdsOwn (repository: Repository, command: 'forget' | 'prune', pointer: string, { own, last }: OwnPublished, signal?: AbortSignal): Promise<boolean> {
  if (last !== undefined && pointer === last.cid) return true
  const fetch = repository.readContext(command, { signal })
  try {
    if (own !== undefined) {
      const { manifest } = await readPublish(repository.home, pointer, repository.manifestCache, fetch)
      const there = manifest?.devices.find(d => d.deviceId === own.deviceId)?.lastSeq ?? 0
      if (there >= own.seq) return true
    }
    if (last !== undefined) {
      for await (const entry of walkEntries(repository.home, pointer, repository.manifestCache, fetch)) {
        if (entry.cid === last.cid || entry.publishedAs === last.cid) return true
      }
    }
  } catch (err) {
    if (isUnusable(err)) return true
    throw err
  }
  return false
}

/**
 * A forget or prune stopped by a publish made while it ran: another device's, or this device's
 * daemon's (it cannot tell which). Nothing was changed, and the rerun plans on top of it.
 */
export function contended (command: 'forget' | 'prune', now: string, read: string): ForgetContendedError | PruneContendedError {
  const what = `a publish (another device's, or this device's daemon's) moved the pointer while the ${command} ran (it holds ${now}, not ${read})`
  return command === 'prune'
    ? new PruneContendedError(`${what}: nothing was deleted; run it again`)
    : new ForgetContendedError(`${what}: nothing was forgotten; run it again, and it plans on top of that publish`)
}
