import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { CidsyncError, ContentNotFoundError, IntegrityError, ManifestNamespaceError, SegmentUnusableError, SnapshotFormatError, SnapshotIntegrityError, SnapshotKeyError, SnapshotTooLargeError, SnapshotUnencryptedError } from '../../errors.js'
import { checkSegmentAsync } from '../../index/index.js'
import { canonicalCid } from '../../remote/index.js'
import type { ObjectHome } from '../../store/index.js'
import { unsealSegment, type SegmentRef } from '../../snapshot/index.js'
import { fsyncPath } from '../../util/fsync.js'
import type { ProgressEvent, ProgressOptions } from '../../util/progress.js'
import { SNAPSHOT_PROFILE } from './snapshot-profile.js'
import type { Binding } from './manifest-binding.js'

/** A restore's download of a publish: bytes fetched and checked so far, and in all where known. */
export type DownloadProgress = ProgressEvent<'restore:download', { readonly received: number, readonly total: number | undefined }>

/** `onProgress` is told after each segment is fetched and checked. */
export interface FetchInit extends ProgressOptions<DownloadProgress> {
  readonly stateDir: string
  /** Where the fetched files go while they are opened. */
  readonly dir: string
  readonly label: string
  readonly passphrase?: string
  readonly acceptUnencrypted?: boolean
  /** The namespace and network the publishes read must belong to (a manifest bound to another is refused). */
  readonly binding?: Binding
  /**
   * Segments whose database the caller keeps as a file (a restore's largest base becomes the
   * index): each is fsynced as soon as it is inflated, on libuv's threads while it is checked
   * here, and the promise put in `started` (the caller awaits it before relying on the file).
   */
  readonly syncEarly?: { readonly cids: ReadonlySet<string>, readonly started: Map<string, Promise<void>> }
}

/** Failures a retry cannot mend: the bytes are missing, not what their CID says, or not ours to open. */
export function isUnusable (err: unknown): boolean {
  return err instanceof ContentNotFoundError || err instanceof IntegrityError || err instanceof SnapshotFormatError ||
    err instanceof SnapshotKeyError || err instanceof SnapshotIntegrityError || err instanceof SnapshotTooLargeError ||
    err instanceof SnapshotUnencryptedError || err instanceof SegmentUnusableError || err instanceof ManifestNamespaceError
}

/** A segment or object the store no longer holds: deleted (a prune), not damaged. */
export function isGone (err: unknown): boolean {
  return err instanceof ContentNotFoundError || (err instanceof SegmentUnusableError && err.cause instanceof ContentNotFoundError)
}

/**
 * This device lacks the key the files were sealed with (found anywhere in the cause chain): not
 * damage, and never a reason to replace the pointer; the fix is `cidsync key import`.
 */
export function missingKey (err: unknown): SnapshotKeyError | undefined {
  for (let at: unknown = err, depth = 0; at instanceof Error && depth < 10; at = at.cause, depth++) {
    if (at instanceof SnapshotKeyError) return at
  }
  return undefined
}

/**
 * Where a fetched file goes while it is opened: inside `init.dir`, named after the CID's last
 * characters, which are checked to be a CID's first (never `/..` from a forged pointer or manifest).
 */
export function fetchedPath (init: Pick<FetchInit, 'dir' | 'label'>, cid: string, suffix: string): string {
  return join(init.dir, `${init.label}-${process.pid}-${canonicalCid(cid).slice(-16)}${suffix}`)
}

function named (err: unknown, what: string, cid: string): unknown {
  if (!isUnusable(err) || err instanceof SegmentUnusableError) return err
  return new SegmentUnusableError(`${what} ${cid} cannot be used: ${(err as CidsyncError).message}`, cid, { cause: err })
}

/**
 * Fetches segments (each verified against its CID, no larger than the manifest says), opens and
 * checks each into a database file. Answers each CID's database; the caller removes them
 * (`removeFetched`). The first that fails is a {@link SegmentUnusableError} naming it.
 */
export async function fetchSegments (clients: ObjectHome, wanted: ReadonlyArray<{ readonly deviceId: string, readonly segment: SegmentRef }>, init: FetchInit): Promise<Map<string, string>> {
  const databases = new Map<string, string>()
  const total = wanted.reduce((sum, w) => sum + w.segment.bytes, 0)
  const unique = wanted.filter((w, i) => wanted.findIndex(o => o.segment.cid === w.segment.cid) === i)
  let received = 0
  // The first failure in the manifest's order is the one named; none is started after one failed.
  let failed: { at: number, err: unknown } | undefined
  const one = async ({ deviceId, segment }: typeof wanted[number], at: number): Promise<void> => {
    const base = fetchedPath(init, segment.cid, '')
    const database = `${base}.sqlite`
    const expected = { deviceId, kind: segment.kind, from: segment.from, to: segment.to, entries: segment.entries }
    try {
      // Inflated as the bytes arrive (the fetch and the inflating overlap; no copy of the sealed
      // bytes is written); the database is checked, and so relied on, only once the fetch has
      // verified the bytes against the CID. Scratch: opened by this process and removed, so not
      // fsynced (a power cut ends the reader too).
      const syncEarly = init.syncEarly?.cids.has(segment.cid) === true
      await clients.objects.getInto(segment.cid, SNAPSHOT_PROFILE, async (bytes) => {
        await unsealSegment({
          source: bytes, bytes: segment.bytes, destination: database, name: segment.cid, stateDir: init.stateDir, passphrase: init.passphrase,
          acceptUnencrypted: init.acceptUnencrypted, signal: init.signal, expected, writeBack: syncEarly
        })
      }, { signal: init.signal, maxBytes: segment.bytes })
      if (syncEarly && init.syncEarly !== undefined) {
        const synced = fsyncPath(database)
        // Awaited by the caller; a failure here is its to see, not an unhandled rejection.
        synced.catch(() => {})
        init.syncEarly.started.set(segment.cid, synced)
      }
      await checkSegmentAsync(database, expected, segment.cid)
      databases.set(segment.cid, database)
      received += segment.bytes
      init.onProgress?.({ type: 'restore:download', detail: { received, total } })
    } catch (err) {
      // What the reader beside the fetch made, if the bytes were not the CID's or did not check.
      await rm(database, { force: true })
      if (failed === undefined || at < failed.at) failed = { at, err: named(err, `segment (${segment.kind} ${segment.from}..${segment.to} of device ${deviceId.slice(0, 12)})`, segment.cid) }
    }
  }
  // A few at once: while one is checked (SQLite, on this thread), the next ones are fetched and
  // inflated (zlib runs off this thread). A base's restore fetches tens of small deltas.
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < unique.length && failed === undefined) {
      const at = next++
      await one(unique[at] as typeof wanted[number], at)
    }
  }
  await Promise.all(Array.from({ length: Math.min(SEGMENTS_AT_ONCE, unique.length) }, worker))
  if (failed !== undefined) {
    await removeFetched(databases)
    throw failed.err
  }
  return databases
}

/** Segments fetched and opened at once by {@link fetchSegments}. */
export const SEGMENTS_AT_ONCE = 4

/** Removes the databases {@link fetchSegments} made. */
export async function removeFetched (databases: ReadonlyMap<string, string>): Promise<void> {
  for (const path of databases.values()) await removeDatabase(path)
}

/**
 * Removes a database made aside and what SQLite kept beside it: a connection that attached it
 * read-only (the CLI's) cannot checkpoint its WAL, so `-wal` and `-shm` outlive it.
 */
export async function removeDatabase (path: string): Promise<void> {
  for (const suffix of ['', '-wal', '-shm', '-journal']) await rm(`${path}${suffix}`, { force: true })
}
