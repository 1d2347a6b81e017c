import { randomBytes } from 'node:crypto'
import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from 'pino'
import { z } from 'zod'
import { STATE_NAMES } from '../../config/index.js'
import { parseContentRecord, type ContentRecord } from '../../custody/index.js'
import { AbortedError, SnapshotFormatError, SnapshotKeyError, StateWriteError } from '../../errors.js'
import type { Index } from '../../index/index.js'
import {
  MAX_SEALED_CONTENT_INDEX_BYTES, MAX_SEQUENCE, isContentIndexHeader, openContentIndex, readSealedHeader
} from '../../snapshot/index.js'
import { SNAPSHOT_PROFILE } from '../read/index.js'
import { CONTENT_INDEX_NAME, putIndexObject } from './content-index-batch.js'
import { nextIndexBatch } from './index-batch.js'
import { ListedObjects } from '../state/index.js'
import type { Repository } from '../repository.js'

/** Past the last walk's head, objects this much older than it are still looked at: uploads may list a little out of order. */
const HEAD_MARGIN_MS = 10 * 60_000
/** The most listing records one walk reads: past it, older index objects are not looked for. */
const MAX_LISTED = 1_000_000
/** The most index objects one pass reads; the rest wait for the next. */
const MAX_READ = 1_000
/**
 * The most index objects waiting to be read. A listing is the service's word: past this, a walk
 * notes no more, so names it makes up cannot fill the state dir. The rest are found by a later walk.
 */
const MAX_WAITING = 10 * MAX_READ
/** An index object that cannot be fetched this many passes running is refused. */
const MAX_TRIES = 3

const recordSchema = z.object({ seq: z.number().int().min(1).max(MAX_SEQUENCE) }).passthrough()

/** What a pass did with the content index: objects found, read, skipped, refused, sent. */
export interface ContentIndexPass {
  found: number
  read: number
  /** Sealed under a key this device does not have. */
  foreignKey: number
  /** Damaged, forged, or not a content index object: never used. */
  refused: number
  /** Could not be fetched this time: tried again next pass. */
  unreadable: number
  /** Files whose record another device's index object held: recorded here, nothing uploaded. */
  taken: number
  /** Records not taken because the store no longer lists an object they name: their files are sent again. */
  missing: number
  sent: number
  /** Why the listing or the sending failed, when it did (storing went on). */
  errors: string[]
}

/** What the content index works with: the repository gives the objects, the sync store, the state dir and the passphrase. */
export interface ContentIndexComponents {
  readonly repository: Repository
  readonly index: Index
  readonly logger: Logger
  readonly deviceId: string
  readonly hostname: string
}

export interface ContentIndexInit {
  /** The key content is sealed under here: only records under it are used and sent. */
  readonly keyId: string
  readonly signal?: AbortSignal
}

/**
 * The repository's content index (docs/content-format.md, "Content index"), restic's index
 * files: each device uploads its content records in sealed index objects; a device reads the
 * ones it has not read, and asks here whether a file's content is stored before sending it.
 * Nothing is merged: another device's publish is never needed to know what it stored.
 */
export class ContentIndex {
  readonly pass: ContentIndexPass = { found: 0, read: 0, foreignKey: 0, refused: 0, unreadable: 0, taken: 0, missing: 0, sent: 0, errors: [] }
  private readonly spool: string
  /** What the store lists, walked once a pass when a record is to be taken. */
  private listed: ListedObjects | undefined
  private listingFailed = false

  constructor (private readonly components: ContentIndexComponents, private readonly init: ContentIndexInit) {
    this.spool = join(components.repository.config.stateDir, STATE_NAMES.contentSpool)
  }

  /**
   * Finds the index objects the store lists that are not known here, then reads those waiting.
   * Never throws but for a stop or this machine's disk: a listing that fails is logged, and
   * storing goes on, at worst sending content again (it costs bytes, it loses nothing).
   */
  async refresh (): Promise<void> {
    try {
      await this.walk()
    } catch (err) {
      this.stopped(err)
      this.failed(err, 'the store could not be listed for content index objects: content other devices stored since may be sent again')
    }
    await mkdir(this.spool, { recursive: true, mode: 0o700 })
    for (const { cid, tries } of this.components.repository.store.contentIndex.pending(MAX_READ)) await this.read(cid, tries)
  }

  /**
   * Has, for files no record of this index holds. Each file of `files` whose record another
   * device's index object holds is recorded as this device's own (same objects, this device's
   * sequence), so its next publish names the content. Only when the store still lists every
   * object the record names: else the file is sent again, and the record counted as `missing`.
   * Its objects are logged for the mirrors first, as an upload's are. Answers the CIDs taken.
   */
  async take (files: ReadonlyArray<{ readonly cid: string, readonly size: number }>): Promise<Set<string>> {
    const { index, deviceId, hostname } = this.components
    const { store } = this.components.repository
    const taken = new Map<string, ContentRecord>()
    for (const file of files) {
      if (taken.has(file.cid)) continue
      const known = store.contentIndex.known(file.cid, this.init.keyId)
      if (known === undefined) continue
      let record: ContentRecord
      try {
        record = parseContentRecord(JSON.parse(known.record))
      } catch {
        continue
      }
      if (record.size === file.size && await this.held(record)) taken.set(file.cid, record)
    }
    if (taken.size === 0) return new Set()
    const records = [...taken.values()]
    store.mirrorLog.logObjects(records.flatMap(r => r.objects.map(([object]) => ({ cid: object, profile: SNAPSHOT_PROFILE.name }))))
    index.content.record(deviceId, hostname, records.map(r => ({ cid: r.cid, size: r.size, sealing: r.sealing, keyId: r.keyId, keySalt: r.keySalt, objects: JSON.stringify(r.objects) })))
    store.contentIndex.noteTaken(taken.keys(), this.init.keyId)
    this.pass.taken += records.length
    return new Set(taken.keys())
  }

  /** Whether the store lists every object `record` names; a listing that fails takes nothing. */
  private async held (record: ContentRecord): Promise<boolean> {
    if (this.listingFailed) return false
    this.listed ??= new ListedObjects(this.components.repository.objects, this.components.repository.store.contentIndex, MAX_LISTED)
    try {
      const pruning = this.components.repository.store.pruneList
      for (const [object] of record.objects) {
        // A prune may be deleting it: stored again here, in an upload that prune never deletes.
        if (pruning.names(object)) return false
        if (!await this.listed.holds(object, this.init.signal)) {
          if (this.pass.missing++ === 0) this.components.logger.warn({ cid: record.cid, object }, 'another device\'s content index names an object the store no longer lists: its files are stored again')
          return false
        }
      }
      return true
    } catch (err) {
      this.stopped(err)
      this.failed(err, 'the store could not be listed to check what other devices stored: their files are stored again')
      // Not walked again this pass: each record would wait for another failing walk.
      this.listingFailed = true
      return false
    }
  }

  /**
   * Uploads this device's records written since the last index object it uploaded, in objects of
   * as {@link nextIndexBatch} cuts them.
   * The cursor moves only once an upload answered: a kill sends one object again, never skips one.
   * A failure is logged and counted; the records go in the next pass's objects. A pass from the
   * first record on, each batch where the one before ended, holds every record in order, as a full
   * compaction writes them: its objects are the base the first compaction builds on, where there is
   * none yet. A prune in another process moves the same cursor: a pass it moved claims nothing.
   */
  async send (): Promise<void> {
    try {
      await mkdir(this.spool, { recursive: true, mode: 0o700 })
      const { index, deviceId, logger } = this.components
      const state = this.components.repository.store.contentIndex
      const tooLarge = (cid: string, bytes: number): void => { logger.warn({ cid, bytes }, 'a content record is too large for a content index object: other devices may send this content again') }
      let last = state.sent(deviceId)
      let whole = last === 0
      const made: string[] = []
      for (;;) {
        const from = state.sent(deviceId)
        if (from !== last) whole = false
        const batch = nextIndexBatch(index, deviceId, this.init.keyId, from, tooLarge)
        if (batch === undefined) break
        const cid = await this.upload(batch.records, batch.last)
        if (cid !== undefined) made.push(cid)
        last = batch.last
      }
      if (whole && made.length > 0 && state.compactionBase(deviceId) === undefined) state.noteCompactionBase(deviceId, last, made)
    } catch (err) {
      this.stopped(err)
      if (err instanceof StateWriteError) throw err
      this.failed(err, 'a content index object could not be uploaded: it is sent with the next pass; until then other devices may send this content again')
    }
  }

  /** Answers the object uploaded, if the records were any. */
  private async upload (records: readonly string[], last: number): Promise<string | undefined> {
    const { deviceId } = this.components
    const { store } = this.components.repository
    if (records.length === 0) {
      store.contentIndex.noteSent(deviceId, last, undefined, 0)
      return undefined
    }
    const cid = await putIndexObject(this.components.repository, deviceId, records, this.spool, this.init.signal)
    store.contentIndex.noteSent(deviceId, last, cid, records.length)
    this.pass.sent++
    return cid
  }

  /** Walks the listing, newest first, down to where the last walk began; notes the index objects not known yet. */
  private async walk (): Promise<void> {
    const state = this.components.repository.store.contentIndex
    const before = state.head()
    let head: { cid: string, storedAt?: number } | undefined
    let reached = false
    let listed = 0
    // A set: a listing may name one object many times.
    const found = new Set<string>()
    const room = MAX_WAITING - state.waiting()
    let cut = false
    for await (const object of this.components.repository.objects.list({ signal: this.init.signal })) {
      head ??= object.storedAt === undefined ? { cid: object.cid } : { cid: object.cid, storedAt: object.storedAt }
      if (before !== undefined) {
        reached ||= object.cid === before.cid
        const older = before.storedAt === undefined || object.storedAt === undefined || object.storedAt < before.storedAt - HEAD_MARGIN_MS
        if (reached && older) break
      }
      if (++listed > MAX_LISTED) {
        const message = `the store lists more objects than one walk reads (${MAX_LISTED}): older content index objects are not looked for, and content they name may be sent again`
        this.pass.errors.push(message)
        this.components.logger.warn({ listed: MAX_LISTED }, message)
        break
      }
      if (object.name !== CONTENT_INDEX_NAME || found.has(object.cid) || state.knows(object.cid)) continue
      if (found.size >= room) {
        cut = true
        break
      }
      found.add(object.cid)
    }
    state.found([...found])
    this.pass.found += found.size
    if (cut) {
      // The head stays where it was: the next walk looks past this cut again.
      const message = `${MAX_WAITING} content index objects wait to be read: older ones are looked for once these are read, and content they name may be sent again`
      this.pass.errors.push(message)
      this.components.logger.warn({ waiting: MAX_WAITING }, message)
      return
    }
    if (head !== undefined) state.noteHead(head)
  }

  /** Fetches, opens and keeps one index object's records; one that fails is refused, named, and never used. */
  private async read (cid: string, tries: number): Promise<void> {
    const { logger } = this.components
    const { store, objects } = this.components.repository
    const path = join(this.spool, `index-${randomBytes(8).toString('hex')}.fetched`)
    try {
      try {
        await objects.getFile(cid, SNAPSHOT_PROFILE, path, { maxBytes: MAX_SEALED_CONTENT_INDEX_BYTES, durable: false, signal: this.init.signal })
      } catch (err) {
        this.stopped(err)
        const message = (err as Error).message
        if (tries + 1 < MAX_TRIES) {
          store.contentIndex.noteTried(cid, message)
          this.pass.unreadable++
          logger.warn({ object: cid, err: message }, 'a content index object could not be fetched: it is tried again next pass')
          return
        }
        throw new SnapshotFormatError(`content index object ${cid} could not be fetched ${MAX_TRIES} times (${message})`, { cause: err })
      }
      const header = await readSealedHeader(path)
      if (!isContentIndexHeader(header)) throw new SnapshotFormatError(`${cid} is listed as a content index object but is a ${header.engine} ${'kind' in header ? header.kind : 'snapshot'}`)
      if (header.cipher !== 'none' && header.keyId !== this.init.keyId) {
        this.foreign(cid, header.device, `sealed under key ${header.keyId}, not this device's ${this.init.keyId}`)
        return
      }
      const body = await openContentIndex({ path, name: cid, stateDir: this.components.repository.config.stateDir, passphrase: this.components.repository.passphrase, signal: this.init.signal })
      if (body.device === this.components.deviceId) {
        // This device's own, uploaded by a run killed before it noted it: its records are in this
        // index already. Known as its own, a compaction replaces it and a prune deletes it.
        store.contentIndex.noteOwn(cid, body.device, body.records.length)
        this.pass.read++
        return
      }
      const records = body.records.map(value => {
        const record = parseContentRecord(value)
        const { seq } = recordSchema.parse(value)
        return { cid: record.cid, keyId: record.keyId, seq, record: JSON.stringify(record) }
      })
      store.contentIndex.noteRead(cid, body.device, records)
      this.pass.read++
    } catch (err) {
      this.stopped(err)
      if (err instanceof StateWriteError) throw err
      if (err instanceof SnapshotKeyError) {
        this.foreign(cid, '', err.message)
        return
      }
      const message = err instanceof z.ZodError ? `a record's sequence number is not one (${err.issues[0]?.message ?? 'invalid'})` : (err as Error).message
      store.contentIndex.noteSkipped(cid, 'refused', '', message)
      this.pass.refused++
      logger.warn({ object: cid, err: message, code: (err as { code?: unknown }).code }, 'a content index object was refused (damaged, forged, or not one): none of its records is used')
    } finally {
      await rm(path, { force: true })
    }
  }

  private foreign (cid: string, device: string, why: string): void {
    this.components.repository.store.contentIndex.noteSkipped(cid, 'foreign-key', device, why)
    this.pass.foreignKey++
    this.components.logger.info({ object: cid, device, why }, 'a content index object sealed under another key was skipped')
  }

  private failed (err: unknown, message: string): void {
    this.pass.errors.push((err as Error).message)
    this.components.logger.warn({ err: (err as Error).message, code: (err as { code?: unknown }).code }, message)
  }

  /** A stop ends the pass at once, whatever was being done. */
  private stopped (err: unknown): void {
    if (this.init.signal?.aborted === true) throw err instanceof AbortedError ? err : new AbortedError('storing content was stopped')
  }
}
