import type { Index } from '../../index/index.js'

/**
 * What a restored index must not keep of the file it came from: planner statistics
 * (`sqlite_stat1`, `sqlite_stat4`) and free pages. The file is the publisher's; a holder of the key
 * can write any statistics into it, and they steer every query plan here. Free pages carry bytes
 * that are no rows: whatever the publisher's file once held. Answers what was removed.
 */
export function scrubRestoredIndex (index: Index): { readonly statTables: readonly string[], readonly freePages: number } {
  const { db } = index
  const statTables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'sqlite\\_stat%' ESCAPE '\\' ORDER BY name").pluck().all() as string[]
  for (const name of statTables) db.exec(`DROP TABLE "${name}"`)
  const freePages = db.pragma('freelist_count', { simple: true }) as number
  // Only when there is something to drop: VACUUM writes the whole file again.
  if (freePages > 0) db.exec('VACUUM')
  return { statTables, freePages }
}
