import { readFileSync } from 'node:fs'
import type { CID } from 'multiformats/cid'
import type { PackReaders, Place } from './pack-readers.js'

/** A read follows its block this many times as reclaims move it, then fails. */
const MAX_MOVES = 3

/**
 * The block store's reads: a block looked up (pending, indexed, or a file of the layout before
 * packs) and read from its pack. A read whose pack a reclaim removed after the lookup looks the
 * block up again and reads it where it went (blocks.ts, rule 7).
 */
export class BlockReads {
  constructor (
    private readonly lookup: (cid: CID) => { name: string, place: Place | undefined },
    private readonly readers: PackReaders,
    private readonly legacyPath: (name: string) => string | undefined
  ) {}

  /** A block's bytes: read into `into` when it fits (a view of it answered), else into a new buffer. */
  async get (cid: CID, into?: Uint8Array): Promise<Uint8Array> {
    for (let moved = 0; ; moved++) {
      const { name, place } = this.lookup(cid)
      if (place === undefined) {
        const path = this.legacyPath(name)
        if (path === undefined) throw Object.assign(new Error(`block ${name} is not stored`), { code: 'ENOENT' })
        return readFileSync(path)
      }
      try {
        return await this.readers.read(place, name, into)
      } catch (err) {
        // Its pack removed by a reclaim after it was looked up: read where the block went (rule 7).
        if (moved >= MAX_MOVES || !this.movedAway(err, cid, place)) throw err
      }
    }
  }

  /** Whether `err` is `place`'s pack gone, and the block since lies elsewhere or is no longer stored. */
  private movedAway (err: unknown, cid: CID, place: Place): boolean {
    if ((err as { missingPack?: unknown }).missingPack !== place.pack) return false
    const now = this.lookup(cid).place
    return now === undefined || now.pack !== place.pack
  }

  /**
   * The blocks `cids`, in order, read into `into` as far as it holds them (see
   * {@link PackReaders.readRun}: neighbours in a pack in one read); undefined for a block not stored.
   */
  async getRun (cids: readonly CID[], into: Uint8Array): Promise<Array<Uint8Array | undefined>> {
    const found: Array<{ place: Place, name: string }> = []
    const at: number[] = []
    const answers: Array<Uint8Array | undefined> = []
    const legacy: Array<Promise<void>> = []
    for (const cid of cids) {
      const { name, place } = this.lookup(cid)
      if (place !== undefined) {
        at.push(answers.length)
        found.push({ place, name })
        answers.push(undefined)
        continue
      }
      const index = answers.length
      answers.push(undefined)
      legacy.push(this.get(cid).then(bytes => { answers[index] = bytes }, (err: unknown) => {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
      }))
    }
    // Awaited together: a failure of either leaves no read of the other unhandled.
    const [views] = await Promise.all([this.readers.readRun(found, into).catch(async (err: unknown) => {
      if ((err as { missingPack?: unknown }).missingPack === undefined) throw err
      // A pack removed under the run (rule 7): each block read again one by one, where it went.
      return await Promise.all(found.map(async (_, i) => await this.get(cids[at[i] as number] as CID).catch((e: unknown) => {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e
        return undefined
      })))
    }), Promise.all(legacy)])
    views.forEach((view, i) => { answers[at[i] as number] = view })
    return answers
  }
}
