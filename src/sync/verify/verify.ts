import { join } from 'node:path'
import { CidsyncError, SegmentUnusableError } from '../../errors.js'
import type { ObjectHome } from '../../store/index.js'
import { ENGINE_V1, type Manifest } from '../../snapshot/index.js'
import { buildIndex, fetchV1Snapshot, fetchSegments, isUnusable, missingKey, removeDatabase, removeFetched, type FetchInit, readPublish, walkHistory, type ManifestCache } from '../read/index.js'
import type { SyncComponents } from '../sync-components.js'
import type { Repository } from '../repository.js'
import { checkStoredContent, CONTENT_SAMPLE, type ContentCheck } from './stored-content.js'
import { makeDirsSync } from '../../util/make-dirs.js'
import { STATE_NAMES } from '../../config/index.js'
import { removeDeadRunFiles } from '../state/index.js'

/** What a restore drill found. */
export interface VerifyResult {
  /** A restore of what the pointer names would succeed (and with `full`, of every point in the history). */
  readonly restorable: boolean
  readonly cid: string
  readonly checkedAt: string
  readonly publishes: number
  readonly segments: number
  /** This device's rows in the restored index against the local index, as far as the publish saw them. */
  readonly own: { readonly compared: number, readonly differing: number, readonly first: string | null } | null
  /** The first object that failed: its CID and why (and the stored file it held, when it was content). */
  readonly failed: { readonly cid: string, readonly message: string, readonly file?: string } | null
  /**
   * Stored contents brought back (a sample, or all with `content`) of how many the publish's
   * records hold, one per CID, and the paths they are at; null when not reached.
   */
  readonly content?: { readonly checked: number, readonly stored: number, readonly paths: number, readonly all: boolean, readonly failedFiles?: ContentCheck['failedFiles'] } | null
}

/** What a verify reads: a repository on any home (a service, a mirror, a directory). Its sync store is never opened. */
export type VerifyComponents = Omit<SyncComponents, 'repository'> & { readonly repository: Repository }

export interface VerifyInit extends Omit<FetchInit, 'dir' | 'label'> {
  /** What the pointer names now. */
  readonly cid: string
  readonly full?: boolean
  /** Bring back every stored file, not a sample of {@link CONTENT_SAMPLE}. */
  readonly content?: boolean
  readonly cache: ManifestCache
}

/**
 * A restore drill (`cidsync verify`): fetches what the pointer names and every segment a restore
 * needs through the gateways, verifies each against its CID, decrypts and checks it, builds the
 * index aside and compares this device's rows with the local index; with `full`, every segment of
 * every publish in the history is fetched and checked too. A sample of the stored files the
 * rebuilt index's records hold is brought back into a temp dir aside and verified (every one with
 * `content`), then removed. Nothing local is changed. An object that
 * cannot be used ends the drill with `restorable: false` naming it; a network failure throws (the
 * drill could not be run, which says nothing either way).
 */
export async function verify (components: VerifyComponents, init: VerifyInit): Promise<VerifyResult> {
  const clients = components.repository.home
  const dir = join(init.stateDir, STATE_NAMES.snapshots)
  makeDirsSync(dir, 0o700)
  // What drills and reads stopped midway left (their process gone): a daemon may run for months between its own sweeps.
  await removeDeadRunFiles(init.stateDir)
  const fetch: FetchInit = { ...init, dir, label: 'verify' }
  const drill = join(dir, `verify-${process.pid}.sqlite`)
  let publishes = 0
  let segments = 0
  let own: VerifyResult['own'] = null
  let content: VerifyResult['content'] = null
  const result = (failed: VerifyResult['failed']): VerifyResult => ({ restorable: failed === null && (own?.differing ?? 0) === 0, cid: init.cid, checkedAt: new Date().toISOString(), publishes, segments, own, failed, content })
  try {
    // Never the cache for the newest: a drill proves the service still has it.
    const head = await readPublish(clients, init.cid, { get: () => undefined, put: init.cache.put }, fetch)
    publishes++
    if (head.manifest === undefined) {
      await namedV1(init.cid, fetchV1Snapshot(clients, init.cid, drill, fetch))
      own = components.index.segments.compareDevice(drill, components.deviceId)
    } else {
      await buildIndex(clients, head.manifest, drill, fetch)
      segments += head.manifest.devices.reduce((n, d) => n + d.segments.length, 0)
      const seen = head.manifest.devices.find(d => d.deviceId === components.deviceId)?.lastSeq
      const here = components.index.segments.devices().find(d => d.deviceId === components.deviceId)?.lastSeq ?? 0
      // An index behind what the pointer holds of this device (a `restore --at` an earlier point,
      // a rebuilt index) is older, not damaged: its next publish catches up; nothing to compare yet.
      own = seen === undefined || here < seen ? null : components.index.segments.compareDevice(drill, components.deviceId, seen)
    }
    if (own !== null && own.differing > 0) {
      return result({ cid: init.cid, message: `${own.differing} of this device's files differ between the index and what a restore would install (first: ${own.first ?? '?'})` })
    }
    // The files themselves, as a new device would bring them back from the index it restored.
    const files = await checkStoredContent(clients, drill, { stateDir: init.stateDir, passphrase: init.passphrase, signal: init.signal, all: init.content })
    content = { checked: files.checked, stored: files.stored, paths: files.paths, all: init.content === true, ...(files.failedFiles === undefined || files.failedFiles.count === 0 ? {} : { failedFiles: files.failedFiles }) }
    if (files.failed !== null) {
      components.logger.warn({ cid: files.failed.cid, err: files.failed.message, files: files.failedFiles?.count ?? 1 }, 'restore drill: a stored file does not come back')
      return result(files.failed)
    }
    await removeDatabase(drill)
    if (init.full === true && head.entry.previous !== null) {
      const checked = new Set((head.manifest?.devices ?? []).flatMap(d => d.segments.map(s => s.cid)))
      for await (const publish of walkHistory(clients, head.entry.previous, init.cache, fetch)) {
        publishes++
        if (publish.manifest === undefined) {
          await namedV1(publish.entry.cid, fetchV1Snapshot(clients, publish.entry.cid, drill, fetch))
          await removeDatabase(drill)
          continue
        }
        segments += await checkSegments(clients, publish.manifest, checked, fetch)
      }
    }
    return result(null)
  } catch (err) {
    if (!isUnusable(err)) throw err
    // This device cannot open them, which says nothing of whether they restore where the key is.
    const key = missingKey(err)
    if (key !== undefined) throw key
    const cid = err instanceof SegmentUnusableError ? err.cid : init.cid
    components.logger.warn({ cid, err: (err as Error).message }, 'restore drill failed')
    return result({ cid, message: (err as CidsyncError).message })
  } finally {
    await removeDatabase(drill)
  }
}

/** A `/1` snapshot that cannot be used ends the drill naming it. */
async function namedV1 (cid: string, opening: Promise<void>): Promise<void> {
  try {
    await opening
  } catch (err) {
    if (!isUnusable(err)) throw err
    throw new SegmentUnusableError(`${ENGINE_V1} snapshot ${cid} cannot be used: ${(err as Error).message}`, cid, { cause: err })
  }
}

/** Fetches and checks the segments of a manifest not checked yet (one at a time: a drill needs no more disk than one segment). */
async function checkSegments (clients: ObjectHome, manifest: Manifest, checked: Set<string>, init: FetchInit): Promise<number> {
  let count = 0
  for (const device of manifest.devices) {
    for (const segment of device.segments) {
      if (checked.has(segment.cid)) continue
      await removeFetched(await fetchSegments(clients, [{ deviceId: device.deviceId, segment }], init))
      checked.add(segment.cid)
      count++
    }
  }
  return count
}
