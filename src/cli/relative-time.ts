/**
 * `3 min ago`, `in 2 h`, `just now`: how far a time is from now, as the dashboard says it. The
 * `status` command puts it beside the ISO time, which stays for scripts and other time zones.
 */
export function relativeTime (iso: string, now = Date.now()): string {
  const at = Date.parse(iso)
  if (Number.isNaN(at)) return '?'
  const seconds = Math.round((at - now) / 1000)
  const size = Math.abs(seconds)
  if (size < 10) return 'just now'
  const amount = size < 60 ? `${size} s` : size < 3600 ? `${Math.floor(size / 60)} min` : size < 86_400 ? `${Math.floor(size / 3600)} h` : `${Math.floor(size / 86_400)} d`
  return seconds < 0 ? `${amount} ago` : `in ${amount}`
}

/** `2026-05-01T10:00:00.000Z (3 min ago)`. */
export function timeWithAge (iso: string, now = Date.now()): string {
  return `${iso} (${relativeTime(iso, now)})`
}
