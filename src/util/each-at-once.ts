/**
 * Runs `work` over `items`, `limit` at a time, in order of start. Every started item ends before
 * this answers; the first failure (an abort) is thrown then.
 */
export async function eachAtOnce<T> (items: readonly T[], limit: number, work: (item: T, at: number) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const at = next++
      await work(items[at] as T, at)
    }
  }
  const settled = await Promise.allSettled(Array.from({ length: Math.min(limit, items.length) }, worker))
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected')
  if (failed !== undefined) throw failed.reason
}

