/**
 * Runs `work` over `items` in order, up to `ahead` started before the caller takes their answers:
 * the next items load while the caller uses the one it took. Every started item is owned: a
 * failure is thrown by the {@link next} that takes it, and {@link settle} waits for the rest.
 */
export class ReadAhead<T, R> {
  private readonly started: Array<Promise<R>> = []
  private nextItem = 0

  constructor (private readonly items: readonly T[], private readonly ahead: number, private readonly work: (item: T) => Promise<R>) {}

  /** The next item's answer, in the order of `items`; starts the ones after it. */
  async next (): Promise<R> {
    this.fill()
    const answer = this.started.shift()
    if (answer === undefined) throw new RangeError('every item was taken already')
    this.fill()
    return await answer
  }

  /** Waits for every item started and not taken (their answers and failures dropped): call it before letting go of what they use. */
  async settle (): Promise<void> {
    await Promise.allSettled(this.started.splice(0))
  }

  private fill (): void {
    while (this.started.length < this.ahead && this.nextItem < this.items.length) {
      const running = this.work(this.items[this.nextItem++] as T)
      // Owned here until taken: one that fails before its turn is thrown by the next() that takes it.
      running.catch(() => {})
      this.started.push(running)
    }
  }
}
