import type { ObjectStore } from '../../store/index.js'
import type { ContentIndexState } from './content-index.js'

/** CIDs noted a transaction at a time while the listing is walked. */
const NOTE_BATCH = 1000

/**
 * Which objects the store holds, from one walk of its listing a storing pass, noted in the sync
 * store's connection (not in memory). A record another device stored is taken only when the store
 * still holds every object it names: a lost or deleted object is sent again, never counted on.
 */
export class ListedObjects {
  private walked: Promise<void> | undefined
  /** Whether the walk read the whole listing: past the bound, an object not noted may still be listed. */
  complete = false
  /** Whether a walk ran and stopped at the bound. */
  cut = false

  constructor (private readonly objects: ObjectStore, private readonly state: ContentIndexState, private readonly most: number) {}

  /** Whether the store lists `cid`; the first call walks the listing (at most `most` rows). */
  async holds (cid: string, signal?: AbortSignal): Promise<boolean> {
    this.walked ??= this.walk(signal)
    await this.walked
    return this.state.listed(cid)
  }

  private async walk (signal?: AbortSignal): Promise<void> {
    this.state.clearListed()
    let batch: string[] = []
    let rows = 0
    for await (const object of this.objects.list({ signal })) {
      batch.push(object.cid)
      if (batch.length >= NOTE_BATCH) { this.state.noteListed(batch); batch = [] }
      // Past the bound, what is not noted is not taken: its content is sent again, never lost.
      if (++rows >= this.most) {
        this.state.noteListed(batch)
        this.cut = true
        return
      }
    }
    this.state.noteListed(batch)
    this.complete = true
  }
}
