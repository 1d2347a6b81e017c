import type { Logger } from 'pino'
import type { Config } from '../../config/index.js'
import { MirrorPointerAheadError, MirrorPointerRolledBackError, PointerNotFoundError } from '../../errors.js'
import { ENGINE } from '../../snapshot/index.js'
import { cachedHistory } from '../read/index.js'
import type { MirrorLink, MirrorPointerNote } from './link.js'
import type { ReplicaRow } from '../state/index.js'
import type { Repository } from '../repository.js'

/** Publishes looked back through to tell an older pointer from one ahead. */
const HISTORY_LOOKBACK = 10_000

export interface MirrorPointerComponents {
  readonly link: MirrorLink
  /** The repository on the primary: its pointer and the sync store's records of it. */
  readonly repository: Repository
  readonly logger: Logger
  readonly config: () => Config
  readonly signal: AbortSignal
  /** Told when the pointer moved there or went astray. */
  readonly tell: (what: 'published' | 'pointer', cid: string, message: string | null) => void
}

/**
 * A mirror's pointer, kept moving forward and never back: each publish's move (once its
 * objects are there), and a look now and then at what it holds. Nothing, what this device put
 * there last, or an older publish of its history: moved. Anything else is ahead (another
 * device's publish, or forged): reported, never overwritten. Set back: moved forward, reported.
 */
export class MirrorPointerGuard {
  /** What is wrong with the mirror's pointer (null: nothing), for status. */
  note: MirrorPointerNote | null = null
  /** When it was last looked at or moved (ms). */
  lastCheck = 0

  constructor (private readonly components: MirrorPointerComponents) {}

  private get name (): string {
    return this.components.link.name
  }

  /** The mirror's pointer now, or undefined when it holds none. */
  private async current (): Promise<string | undefined> {
    const { namespace, network } = this.components.config()
    try {
      return (await this.components.link.clients.pointers.current(namespace, network, { signal: this.components.signal })).snapshotCid
    } catch (err) {
      if (err instanceof PointerNotFoundError) return undefined
      throw err
    }
  }

  /** The primary's pointer now (undefined when it holds none or cannot be read: then nothing is excused by it). */
  private async primaryPointer (): Promise<string | undefined> {
    const { namespace, network } = this.components.config()
    try {
      return (await this.components.repository.pointers.current(namespace, network, { signal: this.components.signal }))?.snapshotCid
    } catch {
      return undefined
    }
  }

  /** Whether `seen` is the publish the primary (or this device's last look at it) holds: another device's, followed. */
  private async isPrimarys (seen: string): Promise<boolean> {
    return seen === this.components.repository.store.remotePointer()?.cid || seen === await this.primaryPointer()
  }

  /** The publishes before `cid` this device knows (its manifest cache), `cid` itself left out. */
  private olderThan (cid: string): Set<string> {
    return new Set(cachedHistory(this.components.repository.store.manifestCache, cid, HISTORY_LOOKBACK).slice(1).map(e => e.cid))
  }

  /** The pointer row `row`: its objects are on the mirror; the pointer is moved there unless it is ahead. */
  async move (row: ReplicaRow): Promise<void> {
    const { repository: { store }, link, logger } = this.components
    const current = await this.current()
    const ours = store.mirrorLog.mirror(link.name).published?.cid
    if (current === row.cid) {
      this.note = null
      store.mirrorLog.notePublished(link.name, row.cid, row.seq)
      return
    }
    if (current !== undefined && current !== ours && !this.olderThan(row.cid).has(current)) {
      // The primary's pointer is there already (another device published past this one): followed, not a problem.
      if (await this.isPrimarys(current)) this.note = null
      else this.noteAhead(current, row.cid)
      // Its objects are there; the pointer is left as it is, and looked at again later.
      store.mirrorLog.advance(link.name, row.seq)
      return
    }
    // Set back: it holds less than this device put there (nothing, or a publish before ours).
    if (ours !== undefined && current !== ours && (current === undefined || this.olderThan(ours).has(current))) this.noteRolledBack(current ?? '', ours)
    else this.note = null
    await this.put(row.cid)
    store.mirrorLog.notePublished(link.name, row.cid, row.seq)
    this.lastCheck = Date.now()
    logger.info({ mirror: link.name, cid: row.cid }, 'mirror: pointer moved')
    this.components.tell('published', row.cid, null)
  }

  /** Nothing to copy: the mirror's pointer should still be the last one put there. */
  async check (): Promise<void> {
    const { repository: { store }, link } = this.components
    this.lastCheck = Date.now()
    const ours = store.mirrorLog.mirror(link.name).published?.cid
    if (ours === undefined) return
    const current = await this.current()
    if (current === ours) {
      if (this.note?.state === 'ahead') this.note = null
      return
    }
    if (current !== undefined && !this.olderThan(ours).has(current)) {
      // Another device moving the pointer past ours, to what the primary's pointer holds too, is no problem.
      if (await this.isPrimarys(current)) {
        if (this.note?.state === 'ahead') this.note = null
        return
      }
      this.noteAhead(current, ours)
      return
    }
    this.noteRolledBack(current ?? '', ours)
    await this.put(ours)
  }

  private async put (cid: string): Promise<void> {
    const { namespace, network } = this.components.config()
    const entries = cachedHistory(this.components.repository.store.manifestCache, cid, 1)[0]?.entries
    await this.components.link.clients.pointers.put({ snapshotCid: cid, engine: ENGINE, namespace, network, ...(entries === undefined ? {} : { memories: entries }) }, { signal: this.components.signal })
  }

  private noteAhead (seen: string, ours: string): void {
    const err = new MirrorPointerAheadError(`mirror ${this.name}'s pointer holds ${seen}, which is not among this device's publishes before ${ours}: another device wrote it, or it is forged. It is left as it is; \`cidsync verify --mirror ${this.name}\` tells whether it restores`)
    if (this.note?.seen !== seen) {
      this.components.logger.warn({ mirror: this.name, seen, ours }, 'mirror: pointer ahead of this device\'s; not overwritten')
      this.components.tell('pointer', seen, err.message)
    }
    this.note = { state: 'ahead', at: new Date().toISOString(), seen, code: err.code, message: err.message }
  }

  private noteRolledBack (seen: string, ours: string): void {
    const err = new MirrorPointerRolledBackError(`mirror ${this.name}'s pointer went back to ${seen === '' ? 'nothing' : seen} from ${ours}, which this device put there: it was moved forward again`)
    this.components.logger.warn({ mirror: this.name, seen, ours }, 'mirror: pointer rolled back; moved forward again')
    this.components.tell('pointer', seen, err.message)
    this.note = { state: 'rolled-back', at: new Date().toISOString(), seen, code: err.code, message: err.message }
  }
}
