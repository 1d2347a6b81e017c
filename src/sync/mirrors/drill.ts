import type { Logger } from 'pino'
import { NothingPublishedError, PointerNotFoundError } from '../../errors.js'
import type { Index } from '../../index/index.js'
import type { Repository } from '../repository.js'
import { recordDrill, verify, type VerifyResult } from '../verify/index.js'
import type { MirrorLog } from '../state/index.js'

export interface MirrorDrillComponents {
  readonly index: Index
  readonly logger: Logger
  readonly deviceId: string
  /** The repository on the mirror: the drill reads nothing else. */
  readonly repository: Repository
  /** Where the result is recorded; absent on a fresh device (nothing kept). */
  readonly log?: MirrorLog
}

export interface MirrorDrillOptions {
  readonly full?: boolean
  readonly content?: boolean
  readonly signal?: AbortSignal
}

/**
 * The restore drill against one mirror alone: its pointer, its manifest and every segment a
 * restore needs through its gateways, a sample of stored files back from it, and nothing from
 * the primary (not even manifests this device has read before: the cache is the drill's own).
 * Recorded per mirror, for status and metrics: a mirror is only a second home if it restores.
 */
export async function drillMirror (components: MirrorDrillComponents, name: string, options: MirrorDrillOptions = {}): Promise<VerifyResult> {
  const { repository } = components
  const { config } = repository
  let cid: string
  try {
    cid = (await repository.pointers.current(config.namespace, config.network, { signal: options.signal })).snapshotCid
  } catch (err) {
    if (err instanceof PointerNotFoundError) {
      const failure = new NothingPublishedError(`mirror ${name} holds no pointer for ${config.namespace} on ${config.network}: nothing has been copied there yet (see \`cidsync status\`), so it would restore nothing`, { cause: err })
      components.log?.noteDrill(name, JSON.stringify({ restorable: false, cid: '', checkedAt: new Date().toISOString(), publishes: 0, segments: 0, own: null, failed: { cid: '', message: failure.message } } satisfies VerifyResult), null)
      throw failure
    }
    throw err
  }
  const kept = new Map<string, string>()
  const recorder = { verified: (result: { restorable: boolean, checkedAt: string }) => { components.log?.noteDrill(name, JSON.stringify(result), result.restorable ? result.checkedAt : null) } }
  const result = await recordDrill({ store: recorder, logger: components.logger }, cid, async () => await verify(
    { index: components.index, repository, logger: components.logger, deviceId: components.deviceId },
    {
      ...repository.readContext('verify', { signal: options.signal }),
      cid, full: options.full, content: options.content, cache: { get: (c) => kept.get(c), put: (c, json) => { kept.set(c, json) } }
    }), options.signal)
  if (result.restorable) components.logger.info({ mirror: name, cid, segments: result.segments }, 'mirror restore drill: restorable')
  else components.logger.error({ mirror: name, cid, failed: result.failed }, 'mirror restore drill: NOT restorable')
  return result
}
