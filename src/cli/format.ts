import { safeText } from './safe-text.js'

export { formatBytes } from '../util/format-bytes.js'

/** `2h 03m`, `45s`. */
export function formatDuration (seconds: number): string {
  const s = Math.floor(seconds)
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`
  if (s < 86400) return `${Math.floor(s / 3600)}h ${String(Math.floor(s / 60) % 60).padStart(2, '0')}m`
  return `${Math.floor(s / 86400)}d ${String(Math.floor(s / 3600) % 24).padStart(2, '0')}h`
}

/** Rows as aligned columns; `right` names the columns to right-align (numbers). Every cell is shown with control characters neutralised. */
export function formatTable (header: readonly string[], unsafeRows: ReadonlyArray<readonly string[]>, right: ReadonlySet<number> = new Set()): string {
  const rows = unsafeRows.map(row => row.map(safeText))
  // A loop, not Math.max(...rows): a spread of 200,000 rows overflows the stack (`ls` of a large index).
  const widths = header.map((h, i) => rows.reduce((widest, r) => Math.max(widest, (r[i] ?? '').length), h.length))
  const line = (cells: readonly string[]): string => cells
    .map((c, i) => i === cells.length - 1 && !right.has(i) ? c : right.has(i) ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0))
    .join('  ')
  return [line(header), ...rows.map(line)].join('\n') + '\n'
}

export function printJson (value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n')
}

/**
 * `1,024`: a whole number grouped as en-US groups it, without `toLocaleString`, whose first call
 * loads ICU's data and slows a command's start. Other numbers go to `toLocaleString`.
 */
export function formatCount (count: number): string {
  if (!Number.isSafeInteger(count)) return count.toLocaleString('en-US')
  const digits = String(Math.abs(count)).replace(/\B(?=(\d{3})+$)/g, ',')
  return count < 0 ? `-${digits}` : digits
}

/** `1 entry`, `2 entries`, `1,024 files`: a count with the word that agrees with it. */
export function countOf (count: number, one: string, many: string): string {
  return `${formatCount(count)} ${count === 1 ? one : many}`
}

/** `3,008 of 3,010 stored files`: a part of a count, both written as {@link countOf} writes one. */
export function partOf (part: number, whole: number, one: string, many: string): string {
  return `${formatCount(part)} of ${countOf(whole, one, many)}`
}
