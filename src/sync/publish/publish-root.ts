import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import * as CarBufferWriter from '@ipld/car/buffer-writer'
import { CID } from 'multiformats/cid'
import { RemoteResponseError, RemoteStatusError } from '../../errors.js'
import { chainNodes, parseManifest, publishNode, segmentLinks, type ChainPublish, type RootBlock, type RootLink, type RootNode } from '../../snapshot/index.js'
import { failpoint } from '../../util/failpoint.js'
import type { PublishComponents, PublishInit } from './publish-init.js'
import { isUnusable, MAX_HISTORY, readPublish, type FetchInit } from '../read/index.js'
import type { JobAt, PlainNode, PlainRootRow, SyncStore } from '../state/index.js'

/** What a publish's plain root is, once uploaded. */
export interface UploadedRoot { readonly root: string }

/**
 * Uploads the plain root of the job's publish (docs/snapshot-format.md, "The plain root"), after
 * its manifest: the publish's node with the content its index's records name, and the nodes of
 * earlier publishes this device has not uploaded (the chain walked back to one it has, manifests
 * read as `history` reads them). Every node sent is under the root, so the service lists one
 * upload. The publish's own node without content is sent by the next publish, which links it.
 * One small CAR to `dag/import`, unpinned: each object was uploaded on its own, and a pin of the
 * root would walk the whole history on every publish. Recorded in
 * `sync.sqlite` once it is there; killed before that, the step runs again and sends it again.
 * A service that refuses it (a 4xx: no `dag/import`, a quota) is logged and the publish goes on
 * without it; anything else fails the step, as an upload does.
 */
export async function uploadPlainRoot (components: PublishComponents, init: PublishInit, store: SyncStore, job: JobAt<'upload'>): Promise<UploadedRoot | undefined> {
  const manifest = parseManifest(job.manifest, job.snapshotCid)
  const { home } = components.repository
  const fetch = components.repository.readContext(`publish-${job.id}-${job.merges}`, { signal: init.signal })
  const chain = await chainBefore(components, store, manifest.previous, fetch)
  const content = contentLinks(components)
  const root = publishNode({ manifest: CID.parse(job.snapshotCid), segments: segmentLinks(manifest), previous: chain.previous, content: content.length === 0 ? undefined : content })
  const blocks = unique([...root.blocks, ...chain.nodes.flatMap(n => n.node.blocks)])
  const path = join(fetch.dir, `publish-${job.id}-${job.merges}.root.car`)
  try {
    await writeFile(path, carOf(root.cid, blocks), { mode: 0o600 })
    const answer = await home.importCar(path, { signal: init.signal, pinRoots: false })
    if (answer.stats !== undefined && answer.stats.blocks !== blocks.length) {
      throw new RemoteResponseError({ service: 'upload endpoint', method: 'POST', url: '/api/v0/dag/import' }, `read ${answer.stats.blocks} blocks of the publish's plain root, not the ${blocks.length} it holds: the publish will try again`)
    }
  } catch (err) {
    if (!refused(err)) throw err
    components.logger.warn({ err, cid: job.snapshotCid }, 'the service refused the publish\'s plain root: published without it (a recursive pin of the manifest holds only the manifest; `cidsync export` writes a CAR rooted at one)')
    return undefined
  } finally {
    await rm(path, { force: true })
  }
  failpoint('publish:root-uploaded')
  const rows: PlainRootRow[] = chain.nodes.map(n => ({ manifest: n.manifest, node: { cid: n.node.cid.toString(), size: n.node.size } }))
  // Without content the root is the publish's node itself, uploaded now.
  rows.push({ manifest: job.snapshotCid, root: root.cid.toString(), ...(content.length === 0 ? { node: { cid: root.cid.toString(), size: root.size } } : {}) })
  store.plainRoots.record(rows)
  components.logger.info({ root: root.cid.toString(), blocks: blocks.length, contentObjects: content.length, publishesLinked: chain.nodes.length }, 'publish: plain root uploaded')
  return { root: root.cid.toString() }
}

/**
 * A 4xx that sending again will not change: not a timeout or a push back, and not a refused
 * credential (the publish stops for that, as for any upload, until it is renewed).
 */
function refused (err: unknown): boolean {
  return err instanceof RemoteStatusError && err.status >= 400 && err.status < 500 && ![401, 403, 408, 429].includes(err.status)
}

/**
 * The node of the publish `previous` names, and the nodes of those before it this device has not
 * uploaded, walked back to one it has (or the chain's start). A publish that cannot be read here
 * (another key, damage, gone from the service) gets a node of its own CID alone, and the walk
 * stops there: the root still holds it, and all that can be read after it.
 */
async function chainBefore (components: PublishComponents, store: SyncStore, previous: string | null, fetch: FetchInit): Promise<{ previous: Pick<RootNode, 'cid' | 'size'> | undefined, nodes: Array<{ manifest: string, node: RootNode }> }> {
  const walked: ChainPublish[] = []
  const seen = new Set<string>()
  let known: PlainNode | undefined
  // A chain that loops back (forged) stops where it does: the walk never takes a publish twice.
  for (let next = previous; next !== null && !seen.has(next) && walked.length < MAX_HISTORY;) {
    const cid = next
    seen.add(cid)
    known = store.plainRoots.node(cid)
    if (known !== undefined) break
    try {
      const publish = await readPublish(components.repository.home, cid, store.manifestCache, fetch)
      walked.push({ cid: CID.parse(cid), segments: segmentLinks(publish.manifest) })
      next = publish.entry.previous
    } catch (err) {
      if (!isUnusable(err)) throw err
      components.logger.warn({ err, cid }, 'a publish of the history cannot be read here: the plain root links it alone, and nothing before it')
      walked.push({ cid: CID.parse(cid), segments: [] })
      break
    }
  }
  const before = known === undefined ? undefined : { cid: CID.parse(known.cid), size: known.size }
  const made = chainNodes(walked.reverse(), before)
  const nodes = made.map((node, i) => ({ manifest: (walked[i] as ChainPublish).cid.toString(), node }))
  const last = made.at(-1)
  return { previous: last === undefined ? before : { cid: last.cid, size: last.size }, nodes }
}

/**
 * Every content object of a record whose file a live row names, once, each with its size as the
 * records say (the end of the last blob they place in it). Versions no row names any more are
 * left out: a forget and a prune may delete them, and a root linking them would keep their
 * blocks on the service for good. Only the objects are read of a record, checked by hand. What
 * does not read is left out and counted.
 */
function contentLinks (components: PublishComponents): RootLink[] {
  const sizes = new Map<string, number>()
  let unusable = 0
  for (const json of components.index.content.liveRecordObjects()) {
    const objects = recordObjects(json)
    if (objects === undefined) { unusable++; continue }
    for (const [object, end] of objects) sizes.set(object, Math.max(sizes.get(object) ?? 0, end))
  }
  const links: RootLink[] = []
  for (const [text, size] of [...sizes].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)) {
    try {
      links.push({ cid: CID.parse(text), size })
    } catch {
      unusable++
    }
  }
  if (unusable > 0) components.logger.warn({ unusable }, 'content records or objects that do not read: left out of the plain root')
  return links
}

/** A record's objects as `[object, end of its blob]`, or undefined when they are not `[[text, offset, length], ...]`. */
function recordObjects (json: string): Array<[string, number]> | undefined {
  let value: unknown
  try {
    value = JSON.parse(json)
  } catch {
    return undefined
  }
  if (!Array.isArray(value)) return undefined
  const objects: Array<[string, number]> = []
  for (const entry of value as unknown[]) {
    if (!Array.isArray(entry) || entry.length !== 3) return undefined
    const [object, offset, length] = entry as unknown[]
    if (typeof object !== 'string' || !Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || (offset as number) < 0 || (length as number) < 0) return undefined
    objects.push([object, (offset as number) + (length as number)])
  }
  return objects
}

function unique (blocks: readonly RootBlock[]): RootBlock[] {
  const seen = new Set<string>()
  return blocks.filter(b => { const text = b.cid.toString(); if (seen.has(text)) return false; seen.add(text); return true })
}

/** A CARv1 of `blocks` under `root`, whole in memory (a root's nodes: kilobytes, a few MiB at most). */
function carOf (root: CID, blocks: readonly RootBlock[]): Uint8Array {
  const length = CarBufferWriter.headerLength({ roots: [root] }) + blocks.reduce((sum, b) => sum + CarBufferWriter.blockLength(b), 0)
  const writer = CarBufferWriter.createWriter(new ArrayBuffer(length), { roots: [root] })
  for (const block of blocks) writer.write(block)
  return writer.close()
}
