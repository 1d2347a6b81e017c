import type { Config } from '../../config/index.js'
import { AbortedError } from '../../errors.js'
import { currentPointer, fetchAndMerge } from '../publish/index.js'
import type { SyncComponents } from '../sync-components.js'

export interface ContentPullInit {
  readonly config: Config
  readonly passphrase?: string
  readonly signal?: AbortSignal
}

/** What the pull did: merged the pointer's publish, found nothing new to merge, or could not. */
export type ContentPull = { readonly merged: string } | { readonly merged: null, readonly failed?: Error }

/**
 * Before a storing pass uploads anything: takes the pointer's records when this device has not
 * merged what the pointer holds (it never restored nor merged, or another device published since),
 * so content another device with the same key already stored is not sent again. Packs differ per
 * device, so the uploads listing alone cannot tell a small file is stored (docs/content-format.md,
 * "Upload"). A pull that fails is logged and answered, never thrown: storing goes on, at worst
 * sending content again, which costs bytes but loses nothing.
 */
export async function pullBeforeStoring (components: SyncComponents, init: ContentPullInit): Promise<ContentPull> {
  const { store, logger } = components
  try {
    const current = await currentPointer(components, init.config, init.signal)
    if (current === undefined) return { merged: null }
    const seen = [store.base(), store.lastPublished()?.cid, store.contentPulled()]
    if (seen.includes(current.cid)) return { merged: null }
    await fetchAndMerge(components, init, current.cid, 'content-pull')
    store.noteContentPulled(current.cid)
    logger.info({ pointer: current.cid }, 'merged the pointer\'s records before storing content, so what other devices stored is not sent again')
    return { merged: current.cid }
  } catch (err) {
    if (init.signal?.aborted === true) throw new AbortedError('storing content was stopped')
    logger.warn({ err: (err as Error).message, code: (err as { code?: unknown }).code }, 'the pointer\'s records could not be merged before storing content: content other devices stored may be sent again')
    return { merged: null, failed: err as Error }
  }
}
