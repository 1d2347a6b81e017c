import type { VerifyResult } from '../verify/index.js'
import type { MirrorLog } from '../state/index.js'
import type { MirrorLink, MirrorPointerNote, ReplicatorState } from './replicator.js'

/** One mirror as status, metrics and the dashboard show it. */
export interface MirrorStatus {
  readonly name: string
  readonly endpoint: string
  /** Objects logged and not on the mirror yet. */
  readonly objectsBehind: number
  /** Publishes whose pointer move waits. */
  readonly publishesBehind: number
  /** How long the oldest row waiting has waited (0 when none). */
  readonly lagSeconds: number
  readonly maxLagSeconds: number
  /** Past `maxLagSeconds`: `status --check` fails. */
  readonly lagging: boolean
  /** The last publish moved to on the mirror. */
  readonly lastPublish: { readonly cid: string, readonly at: string } | null
  readonly copiedTotal: number
  /** The last failure to copy (null once a copy goes through), what to do, and when it is tried again. */
  readonly lastError: ReplicatorState['lastError']
  readonly retryAt: string | null
  readonly pointer: MirrorPointerNote | null
  readonly unavailable: ReplicatorState['unavailable']
  /** The last restore drill against the mirror alone (null before the first). */
  readonly restorable: { readonly ok: boolean, readonly checkedAt: string, readonly cid: string, readonly failed: string | null, readonly lastSuccessAt: string | null } | null
}

function recordedUnavailable (log: MirrorLog, name: string): MirrorStatus['unavailable'] {
  const skipped = log.skipped(name)
  const last = skipped.items.at(-1)
  return { count: skipped.count, last: last === undefined ? null : { cid: last.cid, message: last.message } }
}

/** The drill recorded for a mirror, as status shows it. */
function drillStatus (json: string | null, lastSuccessAt: string | null): MirrorStatus['restorable'] {
  if (json === null) return null
  try {
    const last = JSON.parse(json) as VerifyResult
    const failed = last.failed === null
      ? (last.own !== null && last.own.differing > 0 ? `${last.own.differing} of this device's files differ from what a restore from the mirror installs` : null)
      : `${last.failed.cid === '' ? '' : `${last.failed.cid}: `}${last.failed.message}`
    return { ok: last.restorable, checkedAt: last.checkedAt, cid: last.cid, failed, lastSuccessAt }
  } catch {
    return null
  }
}

/**
 * A mirror's status from the replication log, with the copy loop's `state` when one runs. Without
 * (`cidsync status` with no daemon), what `sync.sqlite` recorded: no error or pointer note, the
 * objects skipped as recorded.
 */
export function mirrorStatus (link: Pick<MirrorLink, 'name' | 'describe' | 'maxLagSeconds'>, log: MirrorLog, state: ReplicatorState | undefined, now = Date.now()): MirrorStatus {
  const record = log.mirror(link.name)
  const behind = log.behind(link.name)
  const lagSeconds = behind.oldestAt === null ? 0 : Math.max(0, Math.round((now - behind.oldestAt) / 1000))
  return {
    name: link.name,
    endpoint: link.describe,
    objectsBehind: behind.objects,
    publishesBehind: behind.pointers,
    lagSeconds,
    maxLagSeconds: link.maxLagSeconds,
    lagging: lagSeconds > link.maxLagSeconds,
    lastPublish: record.published,
    copiedTotal: state?.copiedTotal ?? 0,
    lastError: state?.lastError ?? null,
    retryAt: state?.retryAt ?? null,
    pointer: state?.pointer ?? null,
    unavailable: state?.unavailable ?? recordedUnavailable(log, link.name),
    restorable: drillStatus(record.drill, record.drillSuccessAt)
  }
}
