/**
 * `12 B`, `1.5 KiB`, `2 MiB`: binary units with at most one decimal. The one size format of the
 * CLI, error messages and (a copy in src/dashboard/assets/app.js, checked by its browser test)
 * the dashboard, so a size reads the same everywhere.
 */
export function formatBytes (bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']
  let value = bytes
  let unit = 0
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${unit === 0 ? value : Number(value.toFixed(1))} ${units[unit] ?? ''}`
}
