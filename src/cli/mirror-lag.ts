import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../config/index.js'
import { MirrorBehindError, PointerNotFoundError } from '../errors.js'
import type { ObjectHome } from '../store/index.js'
import type { MirrorBehind } from '../sync/index.js'
import { STATE_NAMES } from '../config/index.js'

/** A mirror's pointer against this device's last known one. */
export interface MirrorLag extends MirrorBehind {
  /** What the mirror's pointer holds. */
  readonly cid: string
  /** Its publish time, when this device has read its manifest. */
  readonly at: string | null
}

const publishes = (n: number): string => `${n} ${n === 1 ? 'publish' : 'publishes'}`

/** One line saying where the mirror's publish stands against the newest this device knows. */
export function lagLine (where: string, lag: MirrorLag): string {
  const known = lag.known === null ? '' : `this device's last known pointer ${lag.known.cid}${lag.known.at === null ? '' : ` (published ${lag.known.at})`}`
  if (lag.known === null) return `${where} holds ${lag.cid}; this device knows no pointer to compare it with: check with \`cidsync history\` once the primary answers`
  if (lag.behind === 0) return `${where} holds the same publish as ${known}`
  if (lag.behind === null) return `${where} holds ${lag.cid}, which is not among the publishes this device has read before ${known}: newer (another device's), or another line`
  return `${where} holds ${lag.cid}${lag.at === null ? '' : ` (published ${lag.at})`}, ${publishes(lag.behind)} behind ${known}: it is an older index, not the latest`
}

/**
 * Reads the mirror's pointer and places it against this device's last known pointer (nothing
 * more is fetched). Older, and not `allowOlder`: {@link MirrorBehindError}, before anything is
 * changed. Undefined when the mirror holds no pointer (the restore says so) or this state dir
 * has no sync state to compare with.
 */
export async function mirrorLag (config: Config, clients: ObjectHome, where: string, allowOlder: boolean): Promise<MirrorLag | undefined> {
  let cid: string
  try {
    cid = (await clients.pointers.current(config.namespace, config.network)).snapshotCid
  } catch (err) {
    if (err instanceof PointerNotFoundError) return undefined
    throw err
  }
  if (!existsSync(join(config.stateDir, STATE_NAMES.syncState))) return { cid, at: null, known: null, behind: null }
  const { SyncStore, cachedHistory, mirrorBehind } = await import('../sync/index.js')
  const store = new SyncStore(config.stateDir)
  let lag: MirrorLag
  try {
    lag = { cid, at: cachedHistory(store.manifestCache, cid, 1)[0]?.at ?? null, ...mirrorBehind(store, cid) }
  } finally {
    store.close()
  }
  if (lag.behind !== null && lag.behind > 0 && !allowOlder) {
    throw new MirrorBehindError(`${lagLine(where, lag)}. Restoring it would install that older index as if it were the latest, so nothing was changed: ` +
      'wait for the mirror to catch up (`cidsync status` on a device that has it), restore from the primary once it answers, or add --allow-older to install it anyway (docs/mirrors.md)')
  }
  return lag
}
