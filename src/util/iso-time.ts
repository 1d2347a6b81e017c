/** JavaScript's dates end here: `toISOString` throws past it. */
const MAX_DATE_MS = 8.64e15

/** `ms` since the epoch as an ISO time; undefined where no date is (a forged or damaged time). */
export function isoTime (ms: number): string | undefined {
  return Number.isFinite(ms) && Math.abs(ms) <= MAX_DATE_MS ? new Date(ms).toISOString() : undefined
}
