/** Bytes of a CARv1 to send as one `dag/import` request: its sections from `start` to `end`. */
export interface CarPart { readonly start: number, readonly end: number, readonly blocks: number }

/**
 * How a CAR is cut: services take 250,000 blocks (and 500,000 links) a request, so a part closes
 * at `target` blocks once an object ends, and at `blocks` or `links` wherever it stands.
 */
export interface CarPartLimits { readonly target: number, readonly blocks: number, readonly links: number }

export const CAR_PART_LIMITS: CarPartLimits = { target: 100_000, blocks: 200_000, links: 400_000 }

/**
 * Plans the parts of a CARv1 as its blocks are scanned. A cut falls where no block read so far
 * links to one not read yet: in a root-first CAR (what `export` writes, and gateways send) that is
 * between objects, so each request brings whole DAGs and the service lists each object once. A
 * part that must close early closes at its last such place; only an object larger than a part is
 * cut inside.
 */
export class CarPartPlanner {
  private readonly parts: CarPart[] = []
  /** Blocks linked to by blocks read, not read yet themselves. */
  private readonly awaited = new Set<string>()
  private start: number
  private last: number
  private blocks = 0
  private links = 0
  /** The part's last place between objects, and its counts there. */
  private clean: { at: number, blocks: number, links: number } | undefined

  /** `firstSection`: the offset of the first section, just past the header. */
  constructor (firstSection: number, private readonly limits: CarPartLimits = CAR_PART_LIMITS) {
    this.start = firstSection
    this.last = firstSection
  }

  /** A block read, its section ending at `end`; `read` says whether a CID came before (it included). */
  add (cid: string, links: readonly string[], read: (cid: string) => boolean, end: number): void {
    if (this.blocks > 0 && (this.blocks >= this.limits.blocks || this.links + links.length > this.limits.links)) this.cutEarly()
    this.blocks++
    this.links += links.length
    this.awaited.delete(cid)
    for (const link of links) if (!read(link)) this.awaited.add(link)
    this.last = end
    if (this.awaited.size > 0) return
    if (this.blocks >= this.limits.target) this.cut(end, this.blocks, this.links)
    else this.clean = { at: end, blocks: this.blocks, links: this.links }
  }

  /** Full: closed at its last place between objects, what came after it carried into the next part. */
  private cutEarly (): void {
    const clean = this.clean
    if (clean === undefined) return this.cut(this.last, this.blocks, this.links)
    this.cut(clean.at, clean.blocks, clean.links)
  }

  /** Closes the part after the last block read, whatever it holds: the next block begins a part. */
  close (): void {
    if (this.blocks > 0) this.cut(this.last, this.blocks, this.links)
  }

  /** The parts, the last one closed at the last block. */
  finish (): CarPart[] {
    if (this.blocks > 0) this.cut(this.last, this.blocks, this.links)
    return this.parts
  }

  private cut (at: number, blocks: number, links: number): void {
    this.parts.push({ start: this.start, end: at, blocks })
    this.start = at
    this.blocks -= blocks
    this.links -= links
    this.clean = undefined
  }
}
