import { join } from 'node:path'
import type Database from 'better-sqlite3'
import type { Statement } from 'better-sqlite3'
import { SchemaTooNewError, SyncStateDamagedError } from '../../errors.js'
import { isDamageError, openSqliteFile } from '../../util/sqlite-file.js'
import { SYNC_MIGRATIONS } from './migrations.js'
import { ContentIndexState } from './content-index.js'
import { MirrorLog } from './mirror-log.js'
import { PlainRoots } from './plain-roots.js'
import { PruneListState } from './prune-list.js'
import { AbandonedUploads } from './abandoned-uploads.js'
import { RetentionRecords } from './retention-records.js'
import { SYNC_STATE_FILE } from './state-file.js'
import { KEY, type IpnsPublished, type Key, type LastPublished, type Refusal, type RestoreRecord } from './keys.js'

function partsKey (cid: string, keyId: string): string {
  return `content-parts/${keyId}/${cid}`
}

/** A SQLite failure that is the file's damage, as the sync state's coded error. */
export function damaged (path: string, err: unknown): unknown {
  return isDamageError(err) ? new SyncStateDamagedError(path, (err as Error).message, { cause: err }) : err
}

/**
 * `sync.sqlite` opened, and what this device has seen and been told, one typed accessor a key
 * (`sync_state`): what it last published, what the pointer held when looked at, its IPNS key,
 * refusals and rollbacks, restores, drills, the manifests already read, content in flight, the
 * content index. The publish job journal on top of it is {@link SyncStore} (store.ts), the one
 * class others use.
 */
export class SyncState {
  protected readonly db: Database.Database
  private readonly values: Record<'value' | 'setValue', Statement>

  /** The file, 0600 (its `-wal` and `-shm` too). One that is not a database throws `SyncStateDamagedError`. */
  constructor (stateDir: string) {
    const path = join(stateDir, SYNC_STATE_FILE)
    // FULL: each publish step is recorded before the next begins, and must survive a power cut too.
    this.db = openSqliteFile(path, {
      migrations: SYNC_MIGRATIONS,
      check: false,
      synchronous: 'FULL',
      damaged: (p, message, cause) => new SyncStateDamagedError(p, message, cause === undefined ? undefined : { cause }),
      tooNew: (p, found, known) => new SchemaTooNewError(p, found, known, 'sync state')
    })
    try {
      this.values = {
        value: this.db.prepare('SELECT value FROM sync_state WHERE key = ?').pluck(),
        setValue: this.db.prepare('INSERT INTO sync_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value')
      }
    } catch (err) {
      this.db.close()
      throw damaged(path, err)
    }
  }

  /** `PRAGMA quick_check`: throws `SyncStateDamagedError` when the file's pages do not add up. */
  check (): void {
    const path = this.db.name
    let result: unknown
    try {
      result = this.db.pragma('quick_check(1)', { simple: true })
    } catch (err) {
      throw damaged(path, err)
    }
    if (result !== 'ok') throw new SyncStateDamagedError(path, `quick_check: ${String(result)}`)
  }

  close (): void {
    if (this.db.open) this.db.close()
  }

  /** The pointer CID this device last published or restored ('' once forgotten: merge before any PUT). */
  base (): string | undefined {
    return this.value(KEY.base)
  }

  lastPublished (): LastPublished | undefined {
    const cid = this.value(KEY.lastCid)
    if (cid === undefined) return undefined
    const own = this.value(KEY.lastOwnEntries)
    return {
      cid,
      marker: this.value(KEY.lastMarker) ?? null,
      at: this.value(KEY.lastAt) ?? null,
      entries: Number(this.value(KEY.lastEntries) ?? 0),
      ownEntries: own === undefined || Number.isNaN(Number(own)) ? null : Number(own)
    }
  }

  /** What the pointer held when last looked at ('' for nothing stored), and when; undefined before the first look. */
  remotePointer (): { readonly cid: string, readonly at: string | null } | undefined {
    const cid = this.value(KEY.remotePointer)
    return cid === undefined ? undefined : { cid, at: this.value(KEY.remotePointerAt) ?? null }
  }

  /** Restores into this state dir, oldest first (the last {@link KEEP_RESTORES}). */
  restores (): RestoreRecord[] {
    return JSON.parse(this.value(KEY.restores) ?? '[]') as RestoreRecord[]
  }

  /** Whether this device has published or merged a manifest bound to its namespace (docs/snapshot-format.md, "Namespace binding"). */
  boundSeen (): boolean {
    return this.value(KEY.boundSeen) === '1'
  }

  noteBound (): void {
    if (!this.boundSeen()) this.setValue(KEY.boundSeen, '1')
  }

  /** The furthest own sequence this device put behind the pointer, if it was this device id's. */
  ownSeq (deviceId: string): number | undefined {
    const own = this.ownPublished()
    return own?.deviceId === deviceId ? own.seq : undefined
  }

  /** The furthest own sequence this state dir put behind the pointer, and the device id it was under. */
  ownPublished (): { readonly deviceId: string, readonly seq: number } | undefined {
    try {
      const value = JSON.parse(this.value(KEY.ownSeq) ?? 'null') as { deviceId?: unknown, seq?: unknown } | null
      return typeof value?.deviceId === 'string' && typeof value.seq === 'number' ? { deviceId: value.deviceId, seq: value.seq } : undefined
    } catch {
      return undefined
    }
  }

  noteOwnSeq (deviceId: string, seq: number): void {
    if ((this.ownSeq(deviceId) ?? -1) < seq) this.setValue(KEY.ownSeq, JSON.stringify({ deviceId, seq }))
  }

  /** What the last merge refused of the pointer's publish (null: nothing). */
  refused (): Refusal | null {
    return this.refusal(KEY.refused)
  }

  noteRefused (refusal: Refusal | null): void {
    this.setValue(KEY.refused, refusal === null ? '' : JSON.stringify(refusal))
  }

  /** The last time the pointer was found without this device's last publish (rolled back). */
  rollback (): Refusal | null {
    return this.refusal(KEY.rollback)
  }

  noteRollback (refusal: Refusal): void {
    this.setValue(KEY.rollback, JSON.stringify(refusal))
  }

  private refusal (key: Key): Refusal | null {
    try {
      const value = JSON.parse(this.value(key) || 'null') as Refusal | null
      return value !== null && typeof value.message === 'string' ? value : null
    } catch {
      return null
    }
  }

  /** The IPNS key made for `ipns_key = "auto"`, once made. */
  ipnsKey (): { readonly name: string, readonly id: string | undefined } | undefined {
    const name = this.value(KEY.ipnsKey)
    return name === undefined ? undefined : { name, id: this.value(KEY.ipnsId) }
  }

  /** What the pointer holds now ('' for nothing stored). */
  notePointer (cid: string, at = new Date()): void {
    this.db.transaction(() => {
      this.setValue(KEY.remotePointer, cid)
      this.setValue(KEY.remotePointerAt, at.toISOString())
    }).immediate()
  }

  /** The pointer could not be read: only when it was looked at. */
  notePointerLookedAt (at = new Date()): void {
    this.setValue(KEY.remotePointerAt, at.toISOString())
  }

  /** The IPNS name last published to; undefined before the first (or when unreadable: it is only shown). */
  ipnsPublished (): IpnsPublished | undefined {
    try {
      const value = JSON.parse(this.value(KEY.ipnsPublished) ?? 'null') as IpnsPublished | null
      return value === null || typeof value.name !== 'string' || typeof value.id !== 'string' ? undefined : value
    } catch {
      return undefined
    }
  }

  noteIpnsPublished (name: string, id: string, cid: string, at = new Date()): void {
    this.setValue(KEY.ipnsPublished, JSON.stringify({ name, id, cid, at: at.toISOString() } satisfies IpnsPublished))
  }

  setIpnsKey (name: string, id: string): void {
    this.db.transaction(() => {
      this.setValue(KEY.ipnsKey, name)
      this.setValue(KEY.ipnsId, id)
    }).immediate()
  }

  /** Manifests are immutable (named by their CID): each one read is kept here and never fetched again. */
  get manifestCache (): { get: (cid: string) => string | undefined, put: (cid: string, json: string) => void } {
    if (this.manifestCacheAccess === undefined) {
      const get = this.db.prepare('SELECT body FROM manifest_cache WHERE cid = ?').pluck()
      const put = this.db.prepare('INSERT INTO manifest_cache (cid, body, cached_at) VALUES (?, ?, ?) ON CONFLICT (cid) DO NOTHING')
      this.manifestCacheAccess = {
        get: (cid) => get.get(cid) as string | undefined,
        put: (cid, json) => { put.run(cid, json, Date.now()) }
      }
    }
    return this.manifestCacheAccess
  }

  private manifestCacheAccess?: { get: (cid: string) => string | undefined, put: (cid: string, json: string) => void }

  /** cidsync-sqlite/3: what to replicate to mirrors, and where each mirror is (mirror-log.ts). */
  get mirrorLog (): MirrorLog {
    this.mirrorLogAccess ??= new MirrorLog(this.db)
    return this.mirrorLogAccess
  }

  private mirrorLogAccess?: MirrorLog

  /** Each publish's node of the plain root this device uploaded, and its own publishes' roots (plain-roots.ts). */
  get plainRoots (): PlainRoots {
    this.plainRootsAccess ??= new PlainRoots(this.db)
    return this.plainRootsAccess
  }

  private plainRootsAccess?: PlainRoots

  /** The repository's content index: other devices' records, the index objects found, what this device sent (content-index.ts). */
  get contentIndex (): ContentIndexState {
    this.contentIndexAccess ??= new ContentIndexState(this.db)
    return this.contentIndexAccess
  }

  private contentIndexAccess?: ContentIndexState

  /** The last forget, prune and prune plan, for status (retention-records.ts). */
  get retention (): RetentionRecords {
    this.retentionAccess ??= new RetentionRecords(this.db)
    return this.retentionAccess
  }

  private retentionAccess?: RetentionRecords

  /** The last prune list read, and how far this device's records were checked against it (prune-list.ts). */
  get pruneList (): PruneListState {
    this.pruneListAccess ??= new PruneListState(this.db)
    return this.pruneListAccess
  }

  private pruneListAccess?: PruneListState

  /** Manifests and segments of publish attempts left for another device's, for a prune (abandoned-uploads.ts). */
  get abandonedUploads (): AbandonedUploads {
    this.abandonedUploadsAccess ??= new AbandonedUploads(this.db)
    return this.abandonedUploadsAccess
  }

  private abandonedUploadsAccess?: AbandonedUploads

  /** The last restore drill (JSON as the drill answered it) and when one last succeeded. */
  lastVerify (): { readonly result: string | undefined, readonly lastSuccessAt: string | undefined } {
    return { result: this.value(KEY.lastVerify), lastSuccessAt: this.value(KEY.lastVerifySuccess) }
  }

  verified (result: { readonly restorable: boolean, readonly checkedAt: string }): void {
    this.db.transaction(() => {
      this.setValue(KEY.lastVerify, JSON.stringify(result))
      if (result.restorable) this.setValue(KEY.lastVerifySuccess, result.checkedAt)
    }).immediate()
  }

  /** Parts of a large file that an interrupted run already stored: a resumed run sends only the rest. */
  contentParts (cid: string, keyId: string): Map<number, string> {
    const json = this.values.value.get(partsKey(cid, keyId)) as string | undefined
    return new Map(json === undefined ? [] : JSON.parse(json) as Array<[number, string]>)
  }

  contentPartStored (cid: string, keyId: string, index: number, object: string): void {
    this.db.transaction(() => {
      const parts = this.contentParts(cid, keyId).set(index, object)
      this.values.setValue.run(partsKey(cid, keyId), JSON.stringify([...parts]))
    }).immediate()
  }

  /** Files whose content failed to store, as the daemon's last pass left them (JSON, read by `cidsync ls`). */
  contentFailures (): string | undefined {
    return this.value(KEY.contentFailures)
  }

  noteContentFailures (failures: readonly unknown[]): void {
    this.setValue(KEY.contentFailures, JSON.stringify(failures))
  }

  /** Once the file's record is in the index, its parts are no longer in flight. */
  forgetContentParts (cid: string, keyId: string): void {
    this.db.prepare('DELETE FROM sync_state WHERE key = ?').run(partsKey(cid, keyId))
  }

  protected value (key: Key): string | undefined {
    return this.values.value.get(key) as string | undefined
  }

  protected setValue (key: Key, value: string): void {
    this.values.setValue.run(key, value)
  }
}
