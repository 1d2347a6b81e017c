import type { DeleteRefusal } from '../../store/index.js'

/** The CIDs a prune's answer names of those refused: enough to look one up, bounded however many. */
const SAMPLE = 10
/** The distinct reasons it keeps: a service gives one or two. */
const REASONS = 3

/** Objects a prune asked the store to delete that it refused to: they stay. */
export interface RefusedDeletes {
  readonly objects: number
  readonly bytes: number
  /** The first CIDs refused, at most {@link SAMPLE}. */
  readonly sample: readonly string[]
  /** The store's reasons (made safe and bounded by the store), the first distinct ones. */
  readonly reasons: readonly string[]
}

/** What a prune was refused, batch by batch: counted whole, kept bounded. */
export class Refusals {
  private objects = 0
  private bytes = 0
  private readonly sample: string[] = []
  private readonly reasons: string[] = []

  add (refused: readonly DeleteRefusal[], sizeOf: (cid: string) => number): void {
    for (const { cid, reason } of refused) {
      this.objects++
      this.bytes += sizeOf(cid)
      if (this.sample.length < SAMPLE) this.sample.push(cid)
      if (this.reasons.length < REASONS && !this.reasons.includes(reason)) this.reasons.push(reason)
    }
  }

  get result (): RefusedDeletes {
    return { objects: this.objects, bytes: this.bytes, sample: [...this.sample], reasons: [...this.reasons] }
  }
}
