/** Durations in Prometheus histogram form: cumulative counts under each upper bound, sum, count. */
export interface HistogramSnapshot { readonly bounds: readonly number[], readonly counts: readonly number[], readonly sum: number, readonly count: number }

export const DEFAULT_SECONDS_BOUNDS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300] as const

export class Histogram {
  private readonly counts: number[]
  private sum = 0
  private count = 0

  constructor (private readonly bounds: readonly number[] = DEFAULT_SECONDS_BOUNDS) {
    this.counts = bounds.map(() => 0)
  }

  observe (value: number): void {
    this.sum += value
    this.count++
    this.bounds.forEach((bound, i) => { if (value <= bound) this.counts[i] = (this.counts[i] ?? 0) + 1 })
  }

  snapshot (): HistogramSnapshot {
    return { bounds: this.bounds, counts: [...this.counts], sum: this.sum, count: this.count }
  }
}
