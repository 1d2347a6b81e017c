import { safeText } from '../util/safe-text.js'

export { safeLines, safeText } from '../util/safe-text.js'

/**
 * A copy of a parsed JSON document (the daemon's status) with every string in it made safe by
 * {@link safeText}, for the readable summary: each name printed from it is then harmless, while
 * the summary's own line breaks stay.
 */
export function safeDocument<T> (value: T): T {
  if (typeof value === 'string') return safeText(value) as T
  if (Array.isArray(value)) return value.map(item => safeDocument(item as unknown)) as T
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, safeDocument(item as unknown)])) as T
  }
  return value
}
