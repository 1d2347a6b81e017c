import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import type { Passed } from '../helpers/holding-proxy.js'
import type { ContentDevice } from './content-devices.js'
import type { LocalService } from './v2-cli.js'

/** A day, in ms. */
export const DAY = 86_400_000
const LISTING = '/api/user/files_uploaded'
const POINTER = '/v1/pointers/current'

/**
 * The listing a prune's deletes walk: the first after the pointer read again past its own listing.
 * Held there, the prune has checked the pointer and not yet deleted anything.
 */
export function afterTheRecheck (request: Passed, before: readonly Passed[]): boolean {
  if (request.method !== 'GET' || request.path !== LISTING) return false
  // The index pointer only: the prune list's pointer beside it is read and set before the recheck.
  const reads = before.filter(p => p.method === 'GET' && (p.path === LISTING || (p.path === POINTER && !p.search.includes('prune-list'))))
  return reads.at(-1)?.path === POINTER && reads.some(p => p.path === LISTING)
}

/** Every upload listed so far, as if made `ms` earlier. */
export function backdate (dir: string, ms: number): void {
  const db = new Database(join(dir, 'service.sqlite'))
  try { db.prepare('UPDATE files SET created_at = created_at - ?').run(ms) } finally { db.close() }
}

/** Points `d`'s config at `url` for every service call. */
export async function through (d: ContentDevice, from: string, url: string): Promise<void> {
  const text = await readFile(d.config, 'utf8')
  await writeFile(d.config, text.split(from).join(url))
}

/** Every object the service lists now. */
export async function listedNow (service: LocalService): Promise<Set<string>> {
  const listed = new Set<string>()
  for await (const object of service.clients.objects.list()) listed.add(object.cid)
  return listed
}
