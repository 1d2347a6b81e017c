import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { randomBytes } from 'node:crypto'
import type { CliResult } from '../helpers/cli.js'
import { HoldingProxy, type Passed } from '../helpers/holding-proxy.js'
import { localServiceUnderTest } from '../helpers/service.js'
import { useTempDir } from '../helpers/temp-dir.js'
import { within } from '../helpers/wait.js'
import { contentDevice, contentObjects, ok, shareKey, storedThenDeleted, type ContentDevice } from './content-devices.js'
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

/**
 * a stores doc.bin, b takes in its publish, a deletes it and forgets two days ago (uploads backdated
 * with it), then a prunes through a proxy that holds it once it has read the pointer again.
 * `doc`: the objects of doc.bin, as a's index named them.
 */
export async function pruneHeldAfterRecheck (margin: string, args = ['prune']): Promise<{ root: string, service: LocalService, a: ContentDevice, b: ContentDevice, bytes: Buffer, doc: Set<string>, proxy: HoldingProxy, pruning: Promise<CliResult> }> {
  const root = await useTempDir()
  // A service without `dag/import` (one of production's): no plain root links the content, and holds it.
  const service = await localServiceUnderTest({ dir: join(root, 'service'), faults: { dag_import: { errorRate: 1, status: 404 } } })
  const a = await contentDevice(root, service, 'a', `compact_after_deltas = 1\n[retention]\nkeep_last = 1\nprune_margin = "${margin}"\n`)
  const b = await contentDevice(root, service, 'b')
  await shareKey(a, b)
  const bytes = randomBytes(3 * 1024 * 1024 + 5)
  // b takes in a's first publish: its index holds a's record of doc.bin.
  let doc = new Set<string>()
  await storedThenDeleted(a, bytes, async () => { doc = contentObjects(a); await ok(b, ['restore']) })
  // Two days ago, as the account's uploads so far were: past any margin.
  await ok(a, ['forget'], { CIDSYNC_TEST_CLOCK: new Date(Date.now() - 2 * DAY).toISOString() })
  backdate(join(root, 'service'), 2 * DAY)
  const proxy = await HoldingProxy.start(service.local.url)
  await through(a, service.local.url, proxy.url)
  const held = proxy.holdWhen(afterTheRecheck)
  const pruning = a.run(args)
  await within(held, 60_000, 'the prune to check the pointer again')
  return { root, service, a, b, bytes, doc, proxy, pruning }
}
