import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import type { CidProfile } from '../content/index.js'
import { ContentIntegrityError } from '../errors.js'
import { makeDirs } from '../util/make-dirs.js'

/**
 * Fetches an object into `destination`, verified against its CID; the caller names the most bytes
 * it accepts, and for plain content the profile the file was stored with (a sealed object's is
 * the one every sealed object is uploaded with: the fetcher's own).
 */
export type FetchObject = (cid: string, destination: string, options: { signal?: AbortSignal, maxBytes: number, profile?: CidProfile }) => Promise<void>

/**
 * Objects fetched for one restore, each once: the files of a pack share one fetch, also when they
 * are restored at once. Only canonical CIDs become file names here, so nothing from a record can
 * name a path.
 */
export class ObjectCache {
  private readonly fetched = new Map<string, Promise<string>>()
  /** Readers of each object between `get` and `release`: one still reading keeps it on disk. */
  private readonly readers = new Map<string, number>()
  private readonly removing = new Map<string, Promise<void>>()
  private ready: Promise<void> | undefined

  constructor (private readonly dir: string, private readonly fetchObject: FetchObject) {}

  /** The object's verified bytes on disk; fetched on first use, at most `maxBytes` of them (plain content: verified under `profile`). */
  async get (cid: string, maxBytes: number, signal?: AbortSignal, profile?: CidProfile): Promise<string> {
    let parsed: string
    try {
      parsed = CID.parse(cid).toString()
    } catch {
      throw new ContentIntegrityError(`a content record names ${JSON.stringify(cid.slice(0, 80))} as an object: not a CID`)
    }
    if (parsed !== cid) throw new ContentIntegrityError(`a content record names ${JSON.stringify(cid.slice(0, 80))} as an object: not a CID as cidsync writes one`)
    // Counted from the call, not the answer: a release meanwhile must not remove what this reads.
    this.readers.set(cid, (this.readers.get(cid) ?? 0) + 1)
    try {
      await this.removing.get(cid)
      let pending = this.fetched.get(cid)
      if (pending === undefined) {
        pending = (async () => {
          this.ready ??= makeDirs(this.dir, 0o700).then(() => {})
          await this.ready
          const path = join(this.dir, cid)
          await this.fetchObject(cid, path, { signal, maxBytes, profile })
          return path
        })()
        this.fetched.set(cid, pending)
        pending.catch(() => { this.fetched.delete(cid) })
      }
      return await pending
    } catch (err) {
      this.unread(cid)
      throw err
    }
  }

  /** One reader fewer; answers whether none is left. */
  private unread (cid: string): boolean {
    const readers = (this.readers.get(cid) ?? 1) - 1
    if (readers > 0) {
      this.readers.set(cid, readers)
      return false
    }
    this.readers.delete(cid)
    return true
  }

  /**
   * Drops an object no other file will read (a large file's part), to keep the disk flat: once
   * every `get` of it is released, so a file restored at the same time with the same content
   * still reads it.
   */
  async release (cid: string): Promise<void> {
    if (!this.unread(cid)) return
    const pending = this.fetched.get(cid)
    if (pending === undefined) return
    this.fetched.delete(cid)
    // A `get` of it from now on waits for the removal, then fetches it again.
    const removal = pending.catch(() => join(this.dir, cid)).then(async (path) => { await rm(path, { force: true }) })
    this.removing.set(cid, removal)
    try {
      await removal
    } finally {
      if (this.removing.get(cid) === removal) this.removing.delete(cid)
    }
  }

  /** Removes every object fetched. */
  async clear (): Promise<void> {
    this.fetched.clear()
    this.readers.clear()
    await rm(this.dir, { recursive: true, force: true })
  }
}
