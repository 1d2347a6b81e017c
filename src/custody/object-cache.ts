import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { ContentIntegrityError } from '../errors.js'

/** Fetches an object into `destination`, verified against its CID; the caller names the most bytes it accepts. */
export type FetchObject = (cid: string, destination: string, options: { signal?: AbortSignal, maxBytes: number }) => Promise<void>

/**
 * Objects fetched for one restore, each once: the files of a pack share one fetch. Only
 * canonical CIDs become file names here, so nothing from a record can name a path.
 */
export class ObjectCache {
  private readonly fetched = new Map<string, Promise<string>>()
  private ready: Promise<void> | undefined

  constructor (private readonly dir: string, private readonly fetchObject: FetchObject) {}

  /** The object's verified bytes on disk; fetched on first use, at most `maxBytes` of them. */
  async get (cid: string, maxBytes: number, signal?: AbortSignal): Promise<string> {
    let parsed: string
    try {
      parsed = CID.parse(cid).toString()
    } catch {
      throw new ContentIntegrityError(`a content record names ${JSON.stringify(cid.slice(0, 80))} as an object: not a CID`)
    }
    if (parsed !== cid) throw new ContentIntegrityError(`a content record names ${JSON.stringify(cid.slice(0, 80))} as an object: not a CID as cidsync writes one`)
    let pending = this.fetched.get(cid)
    if (pending === undefined) {
      pending = (async () => {
        this.ready ??= mkdir(this.dir, { recursive: true, mode: 0o700 }).then(() => {})
        await this.ready
        const path = join(this.dir, cid)
        await this.fetchObject(cid, path, { signal, maxBytes })
        return path
      })()
      this.fetched.set(cid, pending)
      pending.catch(() => { this.fetched.delete(cid) })
    }
    return await pending
  }

  /** Drops an object no other file will read (a large file's part), to keep the disk flat. */
  async release (cid: string): Promise<void> {
    const pending = this.fetched.get(cid)
    if (pending === undefined) return
    this.fetched.delete(cid)
    await rm(await pending.catch(() => join(this.dir, cid)), { force: true })
  }

  /** Removes every object fetched. */
  async clear (): Promise<void> {
    this.fetched.clear()
    await rm(this.dir, { recursive: true, force: true })
  }
}
